//! Where the component's bytes go: the shipped component by section (code, data, each custom
//! section by name, the rest), and the code of the named build (cargo's own artifact of the
//! same build, before crm-host's build script strips the names) by the crate each function
//! comes from. `cargo bench -p crm-sandbox --bench plugin -- size` prints only these.
//!
//! A generic function is counted in the crate that defines it, wherever it was instantiated:
//! `serde_json::de::from_slice::<crm_plugin::…>` is serde_json's; an impl of a trait for a type
//! (`<crm_plugin::X as serde::Deserialize>::deserialize`) is the type's crate, or the trait's
//! when the type is a primitive or a reference to one.

use std::collections::BTreeMap;
use wasmparser::{KnownCustom, Name, Parser, Payload};

/// Prints the figures for the shipped `wasm`, and for the named build at `named` when it is
/// there.
pub fn figures(wasm: &[u8], named: &str) {
    let mut sections: BTreeMap<String, usize> = BTreeMap::new();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.expect("the component parses");
        let (kind, size) = match &payload {
            Payload::CodeSectionStart { range, .. } => ("code".to_string(), range.len()),
            Payload::DataSection(reader) => ("data".to_string(), reader.range().len()),
            Payload::CustomSection(reader) => {
                (format!("custom `{}`", reader.name()), reader.range().len())
            }
            // Containers: their contents are counted section by section.
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => continue,
            other => match other.as_section() {
                Some((_, range)) => ("other (types, imports, exports, ...)".into(), range.len()),
                None => continue,
            },
        };
        *sections.entry(kind).or_default() += size;
    }
    println!("component by section (bytes, nested modules included):");
    let mut sections: Vec<_> = sections.into_iter().collect();
    sections.sort_by_key(|s| std::cmp::Reverse(s.1));
    for (kind, size) in sections {
        println!("  {kind:<40} {size:>10}");
    }

    let Ok(named_wasm) = std::fs::read(named) else {
        println!("no named build at {named}: code by crate not shown");
        return;
    };
    let mut crates: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for module in core_modules(&named_wasm) {
        for (i, size) in module.bodies.iter().enumerate() {
            let index = module.imported_functions + i as u32;
            let owner = module
                .names
                .get(&index)
                .map_or_else(|| "(unnamed)".into(), |name| crate_of(name));
            let entry = crates.entry(owner).or_default();
            entry.0 += size;
            entry.1 += 1;
        }
    }
    let total: usize = crates.values().map(|c| c.0).sum();
    println!(
        "code by crate (named build, {} bytes; the shipped one has the same code): {total} bytes",
        named_wasm.len()
    );
    let mut crates: Vec<_> = crates.into_iter().collect();
    crates.sort_by_key(|c| std::cmp::Reverse(c.1.0));
    for (name, (size, functions)) in crates.iter().take(20) {
        println!(
            "  {name:<24} {size:>10} ({:>4.1}%, {functions} functions)",
            100.0 * *size as f64 / total as f64
        );
    }
    let rest: usize = crates.iter().skip(20).map(|c| c.1.0).sum();
    if rest > 0 {
        println!("  {:<24} {rest:>10}", "(others)");
    }
}

/// One core module's function bodies (bytes each), how many functions it imports (a body's
/// function index follows them), and its function names.
#[derive(Default)]
struct CoreModule {
    imported_functions: u32,
    bodies: Vec<usize>,
    names: BTreeMap<u32, String>,
    is_core: bool,
}

/// Every core module of a component, at any depth.
fn core_modules(wasm: &[u8]) -> Vec<CoreModule> {
    let mut open: Vec<CoreModule> = Vec::new();
    let mut done = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.expect("the component parses") {
            Payload::Version { encoding, .. } => open.push(CoreModule {
                is_core: encoding == wasmparser::Encoding::Module,
                ..CoreModule::default()
            }),
            Payload::ImportSection(reader) => {
                let module = open.last_mut().expect("inside a module");
                for import in reader.into_imports() {
                    if matches!(
                        import.expect("imports parse").ty,
                        wasmparser::TypeRef::Func(_)
                    ) {
                        module.imported_functions += 1;
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                let module = open.last_mut().expect("inside a module");
                module.bodies.push(body.range().len());
            }
            Payload::CustomSection(reader) => {
                if let KnownCustom::Name(names) = reader.as_known() {
                    let module = open.last_mut().expect("inside a module");
                    for subsection in names {
                        if let Ok(Name::Function(map)) = subsection {
                            for naming in map.into_iter().flatten() {
                                module.names.insert(naming.index, naming.name.to_string());
                            }
                        }
                    }
                }
            }
            Payload::End(_) => {
                let module = open.pop().expect("an end closes a module");
                if module.is_core {
                    done.push(module);
                }
            }
            _ => {}
        }
    }
    done
}

/// The crate a function's (mangled) name belongs to: its path's first segment, or for an impl
/// (`<A as B>::f`, `<A>::f`) the crate of `A`, else of `B`. Names without a path (the C
/// allocator, the component's exports) are counted together.
fn crate_of(mangled: &str) -> String {
    let name = format!("{:#}", rustc_demangle::demangle(mangled));
    let first_crate = |path: &str| -> Option<String> {
        let path = path.trim_start_matches(['&', '*', '[', '(']);
        let path = path
            .trim_start_matches("mut ")
            .trim_start_matches("const ")
            .trim_start_matches("dyn ");
        let (head, _) = path.split_once("::")?;
        let ident = head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !head.is_empty();
        ident.then(|| head.to_string())
    };
    if let Some(inner) = name.strip_prefix('<') {
        // The self type runs to " as " or to the closing '>' at depth 0.
        let mut depth = 0;
        let mut end = inner.len();
        for (i, c) in inner.char_indices() {
            match c {
                '<' => depth += 1,
                '>' if depth == 0 => {
                    end = i;
                    break;
                }
                '>' => depth -= 1,
                ' ' if depth == 0 && inner[i..].starts_with(" as ") => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let self_type = &inner[..end];
        let trait_path = inner[end..].strip_prefix(" as ").unwrap_or("");
        return first_crate(self_type)
            .or_else(|| first_crate(trait_path))
            .unwrap_or_else(|| "(impls on primitives)".into());
    }
    first_crate(&name).unwrap_or_else(|| "(no crate: C code, exports)".into())
}
