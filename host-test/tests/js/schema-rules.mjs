// Pure checks on JSON Schemas, used by schemas.mjs: which parameters a schema declares (to see
// whether a client's conversion kept them all), what a client changed in a schema, whether an
// input schema fits the Schema object of Gemini's function declarations as sent, and whether
// OpenAI's strict function mode would take it. No I/O here; selfTest() runs each check on small
// hand-made schemas with known answers.

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// JSON Pointer escaping of one path segment (RFC 6901).
const seg = (key) => String(key).replace(/~/g, '~0').replace(/\//g, '~1');

function deepEqual(a, b) {
  if (a === b) return true;
  if (Array.isArray(a) !== Array.isArray(b) || typeof a !== typeof b || a === null || b === null) return false;
  if (typeof a !== 'object') return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

export function resolveRef(root, ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#')) return undefined;
  let node = root;
  for (const raw of ref.slice(1).split('/').filter((s) => s.length > 0)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node) && !Array.isArray(node)) return undefined;
    node = node[key];
  }
  return node;
}

// --- parameters --------------------------------------------------------------------------------

// Every parameter a schema declares, as a set of paths: `query`, `filters[].value`, a map's
// entries as `fields{^[A-Za-z]...$}` (patternProperties) or `fields{}` (additionalProperties
// schema). $ref is followed into $defs, and anyOf/oneOf/allOf branches are all looked into, so a
// client that inlines or rewrites a schema keeps the same paths as long as it keeps the
// parameters. Works on JSON Schema (parametersJsonSchema) and on Gemini's Schema (parameters).
export function parameterPaths(schema) {
  const paths = new Set();
  const visit = (node, prefix, refs) => {
    if (!isObject(node)) return;
    if (typeof node.$ref === 'string' && !refs.includes(node.$ref)) {
      visit(resolveRef(schema, node.$ref), prefix, [...refs, node.$ref]);
    }
    for (const key of ['anyOf', 'oneOf', 'allOf']) {
      if (Array.isArray(node[key])) for (const branch of node[key]) visit(branch, prefix, refs);
    }
    if (isObject(node.properties)) {
      for (const [name, sub] of Object.entries(node.properties)) {
        const p = prefix ? `${prefix}.${name}` : name;
        paths.add(p);
        visit(sub, p, refs);
      }
    }
    if (isObject(node.items)) visit(node.items, `${prefix}[]`, refs);
    else if (Array.isArray(node.items)) node.items.forEach((s, i) => visit(s, `${prefix}[${i}]`, refs));
    if (isObject(node.patternProperties)) {
      for (const [pattern, sub] of Object.entries(node.patternProperties)) {
        paths.add(`${prefix}{${pattern}}`);
        visit(sub, `${prefix}{${pattern}}`, refs);
      }
    }
    if (isObject(node.additionalProperties)) {
      paths.add(`${prefix}{}`);
      visit(node.additionalProperties, `${prefix}{}`, refs);
    }
  };
  visit(schema, '', []);
  return paths;
}

// What a client's declaration lost and added against the MCP inputSchema, by parameter path.
export function compareParameters(inputSchema, declared) {
  const want = parameterPaths(inputSchema);
  const got = parameterPaths(declared);
  return {
    count: want.size,
    lost: [...want].filter((p) => !got.has(p)),
    added: [...got].filter((p) => !want.has(p)),
  };
}

// Every difference between two JSON values, as { path (JSON Pointer), kind, from, to }.
export function jsonDiff(a, b, path = '', out = []) {
  if (deepEqual(a, b)) return out;
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const p = `${path}/${seg(k)}`;
      if (!Object.hasOwn(b, k)) out.push({ path: p, kind: 'removed', from: a[k] });
      else if (!Object.hasOwn(a, k)) out.push({ path: p, kind: 'added', to: b[k] });
      else jsonDiff(a[k], b[k], p, out);
    }
  } else if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    a.forEach((x, i) => jsonDiff(x, b[i], `${path}/${i}`, out));
  } else {
    out.push({ path, kind: 'changed', from: a, to: b });
  }
  return out;
}

// Sorts a declaration's differences from the inputSchema into the rewrite the Gemini CLI is known
// to make (a two-member type array with "null" becomes that type plus `nullable: true`) and the
// rest, each by path.
export function classifyChanges(diffs) {
  const nullableAt = new Set(diffs.filter((d) => d.kind === 'added' && d.path.endsWith('/nullable') &&
    d.to === true).map((d) => d.path.slice(0, -'/nullable'.length)));
  const nullable = [];
  const other = [];
  for (const d of diffs) {
    const parent = d.path.replace(/\/[^/]*$/, '');
    if (d.kind === 'changed' && d.path.endsWith('/type') && Array.isArray(d.from) && d.from.length === 2 &&
        d.from.includes('null') && d.from.includes(d.to) && nullableAt.has(parent)) {
      nullable.push(parent || '/');
    } else if (!(d.kind === 'added' && d.path.endsWith('/nullable') && nullableAt.has(parent))) {
      other.push(d);
    }
  }
  return { nullable, other };
}

export function showChange(d) {
  const v = (x) => { const s = JSON.stringify(x); return s.length > 80 ? `${s.slice(0, 77)}...` : s; };
  if (d.kind === 'added') return `${d.path} added ${v(d.to)}`;
  if (d.kind === 'removed') return `${d.path} removed (was ${v(d.from)})`;
  return `${d.path} ${v(d.from)} -> ${v(d.to)}`;
}

// --- Gemini's Schema (the `parameters` field) ----------------------------------------------------

// The fields of the Schema object a FunctionDeclaration's `parameters` takes: "a select subset of
// an OpenAPI 3.0 schema object". The Gemini API reference, Schema:
//   https://ai.google.dev/api/caching#Schema
// (the same fields as protos.google.ai.generativelanguage.v1beta.ISchema:
//   https://docs.cloud.google.com/nodejs/docs/reference/generativelanguage/latest/generativelanguage/protos.google.ai.generativelanguage.v1beta.ischema )
// type is one value of the Type enum (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT; the API
// takes them in either case); enum is a list of strings; anyOf is the only combinator. A client
// that turns an MCP inputSchema into `parameters` (rather than passing it as
// `parametersJsonSchema`) can keep only what is listed here.
export const GEMINI_SCHEMA_FIELDS = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems',
  'properties', 'required', 'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern',
  'example', 'anyOf', 'propertyOrdering', 'default', 'items', 'minimum', 'maximum',
]);
export const GEMINI_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);

const GEMINI_HINTS = {
  $schema: 'drop it',
  $ref: 'inline the definition it names',
  $defs: 'inline each use, then drop $defs',
  definitions: 'inline each use, then drop definitions',
  additionalProperties: 'Gemini\'s Schema cannot close an object or type a map',
  patternProperties: 'Gemini\'s Schema has no map keys: name the properties, or take a list of {name, value}',
  oneOf: 'use enum (for constants) or anyOf',
  allOf: 'merge the branches',
  const: 'use enum: [value]',
  not: 'no negation in Gemini\'s Schema',
};

// Every place an input schema goes outside that subset: [{ path (JSON Pointer from #), kind (a
// short name to count by), what }].
// Looks into everything (also under keywords that are themselves outside, such as $defs and
// oneOf), so that one run shows every problem.
export function geminiSubsetFindings(schema) {
  const findings = [];
  const at = (path, kind, what) => findings.push({ path, kind, what });
  const node = (n, path) => {
    if (!isObject(n)) {
      at(path, 'not a schema', `not a schema object: ${JSON.stringify(n)}`);
      return;
    }
    for (const key of Object.keys(n)) {
      if (!GEMINI_SCHEMA_FIELDS.has(key)) {
        const hint = GEMINI_HINTS[key];
        at(`${path}/${seg(key)}`, key, `${key} is not a field of Gemini's Schema${hint ? ` (${hint})` : ''}`);
      }
    }
    if (Object.hasOwn(n, 'type')) {
      if (Array.isArray(n.type)) {
        const nonNull = n.type.filter((t) => t !== 'null');
        at(`${path}/type`, 'type array', `type ${JSON.stringify(n.type)}: Gemini's type is one value` +
          (nonNull.length === 1 ? ` (type "${nonNull[0]}", left out of required, or with nullable: true)`
            : ' (anyOf of one-type schemas, or one type)'));
      } else if (typeof n.type !== 'string' || !GEMINI_TYPES.has(n.type.toLowerCase())) {
        at(`${path}/type`, 'type', `type ${JSON.stringify(n.type)} is not one of ${[...GEMINI_TYPES].join(', ')}`);
      }
    }
    if (Object.hasOwn(n, 'enum')) {
      if (!Array.isArray(n.enum)) at(`${path}/enum`, 'enum', 'enum is not a list');
      else {
        const bad = n.enum.filter((v) => typeof v !== 'string');
        if (bad.length > 0) at(`${path}/enum`, 'non-string enum', `enum values must be strings: ${JSON.stringify(bad)}`);
      }
    }
    if (Object.hasOwn(n, 'required')) {
      if (!Array.isArray(n.required)) at(`${path}/required`, 'required', 'required is not a list');
      else {
        const declared = isObject(n.properties) ? n.properties : {};
        for (const name of n.required) {
          if (!Object.hasOwn(declared, name)) {
            at(`${path}/required`, 'required undefined', `required names ${JSON.stringify(name)}, which properties does not define`);
          }
        }
      }
    }
    // Not in the reference, but the API's answer to a nested object schema without properties
    // (a map, once a converter drops patternProperties or additionalProperties) is 400
    // "...properties: should be non-empty for OBJECT type":
    // https://discuss.ai.google.dev/t/gemini-api-2-0-flash-exp-requires-non-empty-properties-for-open-ended-object-parameters/64086
    if (path !== '#' && String(n.type).toLowerCase() === 'object' &&
        !(isObject(n.properties) && Object.keys(n.properties).length > 0)) {
      at(path, 'object without properties', 'an object schema without properties (the API refuses it nested: ' +
        '"should be non-empty for OBJECT type")');
    }
    if (Object.hasOwn(n, 'properties')) {
      if (!isObject(n.properties)) at(`${path}/properties`, 'properties', 'properties is not an object');
      else for (const [name, sub] of Object.entries(n.properties)) node(sub, `${path}/properties/${seg(name)}`);
    }
    if (Object.hasOwn(n, 'items')) {
      if (Array.isArray(n.items)) at(`${path}/items`, 'tuple items', 'items is a list (a tuple): Gemini\'s items is one schema');
      else node(n.items, `${path}/items`);
    }
    if (Object.hasOwn(n, 'anyOf')) {
      if (!Array.isArray(n.anyOf)) at(`${path}/anyOf`, 'anyOf', 'anyOf is not a list');
      else n.anyOf.forEach((b, i) => node(b, `${path}/anyOf/${i}`));
    }
    // Outside the subset, but looked into all the same.
    for (const key of ['$defs', 'definitions', 'patternProperties']) {
      if (isObject(n[key])) for (const [name, sub] of Object.entries(n[key])) node(sub, `${path}/${key}/${seg(name)}`);
    }
    for (const key of ['oneOf', 'allOf']) {
      if (Array.isArray(n[key])) n[key].forEach((b, i) => node(b, `${path}/${key}/${i}`));
    }
    for (const key of ['additionalProperties', 'not']) {
      if (isObject(n[key])) node(n[key], `${path}/${key}`);
    }
  };
  node(schema, '#');
  if (isObject(schema) && String(schema.type).toLowerCase() !== 'object') {
    at('#/type', 'root type', `parameters must be an object schema, got type ${JSON.stringify(schema.type)}`);
  }
  return findings;
}

// --- OpenAI strict function mode ------------------------------------------------------------------

// OpenAI's Structured Outputs "Supported schemas", which `strict: true` function parameters must
// follow: https://platform.openai.com/docs/guides/structured-outputs#supported-schemas
//   - types string, number, boolean, integer, object, array, null (as a union member), enum,
//     anyOf (not at the root); const; $defs and $ref (also recursive);
//   - constraints: string pattern, format (date-time, time, date, duration, email, hostname, ipv4,
//     ipv6, uuid); number multipleOf, maximum, exclusiveMaximum, minimum, exclusiveMinimum; array
//     minItems, maxItems (minLength/maxLength too, since 2025: the docs list them, with min/max
//     and pattern/format, as unsupported only for fine-tuned models; fine-tuned models are not
//     checked here);
//   - the root is an object, not anyOf; every object has additionalProperties: false and lists
//     every property in required (an optional field is a union with null);
//   - not supported: allOf, not, dependentRequired, dependentSchemas, if, then, else; and, as the
//     list of supported keywords names neither, oneOf, patternProperties, propertyNames,
//     unevaluatedProperties, minProperties, maxProperties, unevaluatedItems, contains,
//     minContains, maxContains, uniqueItems, prefixItems;
//   - limits: at most 5,000 object properties in all, 10 levels of object nesting, 120,000
//     characters of property names, definition names, enum values and const values, 1,000 enum
//     values, and 15,000 characters for the values of one string enum of over 250 values.
// title and description are taken (the docs' own examples, and the schemas OpenAI's SDK helpers
// send, carry them). Other annotations ($comment, examples, default, $schema) are in no list; the
// API is not known to refuse them now (`default` was refused by strict mode in 2024 and is taken
// now), so they are reported as notes, not as reasons.
const OPENAI_KEYWORDS = new Set([
  'title', 'description', 'type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf',
  '$ref', '$defs', 'definitions', 'pattern', 'format', 'multipleOf', 'maximum', 'exclusiveMaximum',
  'minimum', 'exclusiveMinimum', 'minItems', 'maxItems', 'minLength', 'maxLength',
]);
const OPENAI_ANNOTATIONS = new Set(['$comment', 'examples', 'default', '$schema']);
const OPENAI_TYPES = new Set(['string', 'number', 'boolean', 'integer', 'object', 'array', 'null']);
const OPENAI_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);

// { reasons: [why strict mode refuses it], notes: [annotations outside the documented list] }
export function openaiStrictCheck(schema) {
  const reasons = [];
  const notes = new Map();
  let propertyCount = 0;
  let stringSize = 0;
  let enumValues = 0;
  let deepest = 0;
  const nodeAt = (n, path, depth) => {
    if (!isObject(n)) {
      if (n !== true) reasons.push(`${path}: not a schema object`);
      return;
    }
    for (const key of Object.keys(n)) {
      if (OPENAI_ANNOTATIONS.has(key)) notes.set(key, (notes.get(key) ?? 0) + 1);
      else if (!OPENAI_KEYWORDS.has(key)) reasons.push(`${path}/${seg(key)}: ${key} is not supported`);
    }
    const types = Array.isArray(n.type) ? n.type : (n.type === undefined ? [] : [n.type]);
    for (const t of types) if (!OPENAI_TYPES.has(t)) reasons.push(`${path}/type: type ${JSON.stringify(t)}`);
    if (typeof n.format === 'string' && !OPENAI_FORMATS.has(n.format)) {
      reasons.push(`${path}/format: format ${JSON.stringify(n.format)} is not supported`);
    }
    const isObj = types.includes('object') || isObject(n.properties);
    let d = depth;
    if (isObj) {
      d = depth + 1;
      deepest = Math.max(deepest, d);
      if (n.additionalProperties !== false) {
        reasons.push(`${path}: an object without additionalProperties: false`);
      }
      const names = isObject(n.properties) ? Object.keys(n.properties) : [];
      const required = Array.isArray(n.required) ? n.required : [];
      const missing = names.filter((p) => !required.includes(p));
      if (missing.length > 0) {
        reasons.push(`${path}: not every property is required (${missing.join(', ')}; an optional one is a union with null)`);
      }
    }
    if (isObject(n.properties)) {
      for (const [name, sub] of Object.entries(n.properties)) {
        propertyCount += 1;
        stringSize += name.length;
        nodeAt(sub, `${path}/properties/${seg(name)}`, d);
      }
    }
    if (Array.isArray(n.enum)) {
      enumValues += n.enum.length;
      const size = n.enum.reduce((s, v) => s + String(v).length, 0);
      stringSize += size;
      if (n.enum.length > 250 && size > 15_000) reasons.push(`${path}/enum: over 250 values and ${size} characters`);
    }
    if (Object.hasOwn(n, 'const')) stringSize += String(n.const).length;
    if (isObject(n.items)) nodeAt(n.items, `${path}/items`, d);
    else if (Array.isArray(n.items)) reasons.push(`${path}/items: a tuple`);
    if (Array.isArray(n.anyOf)) n.anyOf.forEach((b, i) => nodeAt(b, `${path}/anyOf/${i}`, d));
    for (const key of ['$defs', 'definitions']) {
      if (isObject(n[key])) {
        for (const [name, sub] of Object.entries(n[key])) {
          stringSize += name.length;
          nodeAt(sub, `${path}/${key}/${seg(name)}`, 0);
        }
      }
    }
    // Looked into so that every reason shows, though the keyword alone already refuses it.
    for (const key of ['oneOf', 'allOf']) if (Array.isArray(n[key])) n[key].forEach((b, i) => nodeAt(b, `${path}/${key}/${i}`, d));
    if (isObject(n.patternProperties)) {
      for (const [p, sub] of Object.entries(n.patternProperties)) nodeAt(sub, `${path}/patternProperties/${seg(p)}`, d);
    }
    if (isObject(n.additionalProperties)) nodeAt(n.additionalProperties, `${path}/additionalProperties`, d);
  };
  if (!isObject(schema) || schema.type !== 'object') reasons.push('#: the root is not an object schema');
  if (isObject(schema) && Object.hasOwn(schema, 'anyOf')) reasons.push('#/anyOf: the root is anyOf');
  nodeAt(schema, '#', 0);
  if (propertyCount > 5000) reasons.push(`#: ${propertyCount} object properties (at most 5,000)`);
  if (deepest > 10) reasons.push(`#: ${deepest} levels of object nesting (at most 10)`);
  if (stringSize > 120_000) reasons.push(`#: ${stringSize} characters of names and values (at most 120,000)`);
  if (enumValues > 1000) reasons.push(`#: ${enumValues} enum values (at most 1,000)`);
  return { reasons, notes: [...notes].map(([k, n]) => `${k} ×${n}`) };
}

// --- self-test --------------------------------------------------------------------------------------

// Hand-made schemas with known answers. Returns a list of failures (empty when every check gives
// the expected answer).
export function selfTest() {
  const failures = [];
  const expect = (what, got, want) => {
    if (!deepEqual(got, want)) failures.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  };

  // Within both subsets: what the portable core looks like.
  const good = {
    type: 'object',
    description: 'Find records.',
    properties: {
      query: { type: 'string', description: 'Text to look for.', minLength: 1, maxLength: 200 },
      limit: { type: 'integer', minimum: 1, maximum: 100 },
      sort: { type: 'string', enum: ['asc', 'desc'] },
      filters: {
        type: 'array', maxItems: 5,
        items: { type: 'object', properties: { field: { type: 'string' }, value: { type: 'string' } }, required: ['field', 'value'] },
      },
    },
    required: ['query'],
  };
  expect('gemini subset, good schema', geminiSubsetFindings(good), []);
  expect('parameter paths, good schema', [...parameterPaths(good)].sort(),
    ['filters', 'filters[].field', 'filters[].value', 'limit', 'query', 'sort']);

  // Every kind of finding the current schemas have, and then some.
  const bad = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    additionalProperties: false,
    properties: {
      cursor: { type: ['string', 'null'], default: null },
      layout: { $ref: '#/$defs/Layout' },
      fields: { type: 'object', patternProperties: { '^[a-z]+$': { type: ['string', 'number', 'null'] } } },
      ids: { type: 'array', items: [{ type: 'string' }] },
      level: { enum: [1, 2] },
    },
    required: ['fields', 'id'],
    $defs: { Layout: { oneOf: [{ const: 'objects', type: 'string' }, { const: 'table', type: 'string' }] } },
  };
  expect('gemini subset, bad schema', geminiSubsetFindings(bad).map((f) => f.path), [
    '#/$schema', '#/additionalProperties', '#/$defs',
    '#/required',
    '#/properties/cursor/type',
    '#/properties/layout/$ref',
    '#/properties/fields/patternProperties',
    '#/properties/fields',
    '#/properties/fields/patternProperties/^[a-z]+$/type',
    '#/properties/ids/items',
    '#/properties/level/enum',
    '#/$defs/Layout/oneOf',
    '#/$defs/Layout/oneOf/0/const', '#/$defs/Layout/oneOf/1/const',
  ]);
  expect('parameter paths follow $ref and maps', [...parameterPaths(bad)].sort(),
    ['cursor', 'fields', 'fields{^[a-z]+$}', 'ids', 'layout', 'level']);

  // A conversion that drops a nested parameter and rewrites a nullable type.
  const converted = structuredClone(good);
  delete converted.properties.filters.items.properties.value;
  converted.properties.limit = { type: 'integer', nullable: true, minimum: 1, maximum: 100 };
  const original = structuredClone(good);
  original.properties.limit.type = ['integer', 'null'];
  expect('lost parameters', compareParameters(original, converted),
    { count: 6, lost: ['filters[].value'], added: [] });
  const changes = classifyChanges(jsonDiff(original, converted));
  expect('nullable rewrite recognised', changes.nullable, ['/properties/limit']);
  expect('other changes', changes.other.map(showChange),
    ['/properties/filters/items/properties/value removed (was {"type":"string"})']);

  // OpenAI strict: the documented shape passes; each broken rule is named.
  const strictGood = {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'Text.' },
      limit: { type: ['integer', 'null'], minimum: 1 },
      where: { anyOf: [{ type: 'string' }, { $ref: '#/$defs/Range' }] },
    },
    required: ['query', 'limit', 'where'],
    additionalProperties: false,
    $defs: { Range: { type: 'object', properties: { from: { type: 'number' } }, required: ['from'], additionalProperties: false } },
  };
  expect('openai strict, good schema', openaiStrictCheck(strictGood), { reasons: [], notes: [] });
  expect('openai strict, bad schema', openaiStrictCheck(bad).reasons, [
    '#: not every property is required (cursor, layout, ids, level; an optional one is a union with null)',
    '#/properties/fields/patternProperties: patternProperties is not supported',
    '#/properties/fields: an object without additionalProperties: false',
    '#/properties/ids/items: a tuple',
    '#/$defs/Layout/oneOf: oneOf is not supported',
  ]);
  expect('openai strict, a good Gemini schema is not strict', openaiStrictCheck(good).reasons, [
    '#: an object without additionalProperties: false',
    '#: not every property is required (limit, sort, filters; an optional one is a union with null)',
    '#/properties/filters/items: an object without additionalProperties: false',
  ]);
  return failures;
}
