export function conformanceSteps() { return []; }
