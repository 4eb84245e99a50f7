//! Generates `$OUT_DIR/layout_table.rs` for `tests/layout.rs`: every struct and union of the
//! generated `src/sys.rs` that has a C name, with every field (through bindgen's nested
//! anonymous types, by their C member paths), as pairs of a C expression (`sizeof(...)`,
//! `offsetof(...)`) and the Rust value of the same thing. The test compiles the C side
//! against the installed headers and compares, so nothing in sys.rs is taken on trust.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

struct Item {
    union: bool,
    /// (field name, first line of its type)
    fields: Vec<(String, String)>,
}

/// C names whose layout the library depends on (bindgen also emits libc's own types).
fn has_c_name(n: &str) -> bool {
    !n.contains("__bindgen_ty")
        && ["ibv_", "_ibv_", "verbs_", "_compat_ibv_", "ib_uverbs_", "ib_user_"].iter().any(|p| n.starts_with(p))
}

fn parse(src: &str) -> BTreeMap<String, Item> {
    let mut items = BTreeMap::new();
    let mut cur: Option<(String, Item)> = None;
    for line in src.lines() {
        if let Some((name, item)) = cur.as_mut() {
            if line == "}" {
                if let Some((n, i)) = cur.take() {
                    items.insert(n, i);
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("    pub ") {
                if let Some((f, ty)) = rest.split_once(": ") {
                    let _ = name;
                    item.fields.push((f.to_string(), ty.trim_end_matches(',').to_string()));
                }
            }
            continue;
        }
        for (kw, union) in [("pub struct ", false), ("pub union ", true)] {
            if let Some(rest) = line.strip_prefix(kw) {
                if let Some(name) = rest.strip_suffix(" {") {
                    cur = Some((name.to_string(), Item { union, fields: Vec::new() }));
                }
            }
        }
    }
    items
}

/// The C name of a field: bindgen appends `_` to names that are Rust keywords.
fn c_field(f: &str) -> &str {
    const KEYWORDS: &[&str] = &[
        "type", "priv", "ref", "match", "fn", "impl", "mod", "move", "mut", "pub", "self", "super", "trait", "use",
        "where", "loop", "in", "box", "crate", "dyn", "async", "await", "final", "override", "macro", "abstract",
        "become", "do", "typeof", "unsized", "virtual", "yield", "try",
    ];
    match f.strip_suffix('_') {
        Some(stem) if KEYWORDS.contains(&stem) => stem,
        _ => f,
    }
}

/// Emit the checks of the fields of `ty` (a struct of `items`) reached from the top-level C
/// type `top` by `cpath` / `rpath`.
fn fields(
    items: &BTreeMap<String, Item>,
    top: &str,
    ckind: &str,
    ty: &str,
    cpath: &str,
    rpath: &str,
    out: &mut String,
) {
    let Some(item) = items.get(ty) else { return };
    for (f, fty) in &item.fields {
        if f.starts_with("_bitfield") || f.starts_with("__bindgen_padding") {
            continue;
        }
        let anon = f.starts_with("__bindgen_anon_");
        let (c, r) = (if anon { cpath.to_string() } else { format!("{cpath}{}", c_field(f)) }, format!("{rpath}{f}"));
        if fty.contains("__bindgen_ty") && items.contains_key(fty.as_str()) {
            let (c2, r2) = (if anon { c.clone() } else { format!("{c}.") }, format!("{r}."));
            fields(items, top, ckind, fty, &c2, &r2, out);
            continue;
        }
        let _ = writeln!(
            out,
            "    (\"offsetof({ckind} {top}, {c})\", {{ let u = std::mem::MaybeUninit::<sys::{top}>::uninit(); let b = u.as_ptr(); \
             // SAFETY: addr_of! computes the field's address without reading the uninitialised value.\n        \
             (unsafe {{ std::ptr::addr_of!((*b).{r}) }}) as usize - b as usize }}),"
        );
        if !fty.contains("__IncompleteArrayField") {
            let _ = writeln!(
                out,
                "    (\"sizeof((({ckind} {top} *)0)->{c})\", {{ let u = std::mem::MaybeUninit::<sys::{top}>::uninit(); let b = u.as_ptr(); \
                 // SAFETY: as above.\n        \
                 pointee_size(unsafe {{ std::ptr::addr_of!((*b).{r}) }}) }}),"
            );
        }
    }
}

fn main() {
    let src_path = PathBuf::from("src/sys.rs");
    println!("cargo:rerun-if-changed=src/sys.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let src = std::fs::read_to_string(&src_path).expect("read src/sys.rs");
    let items = parse(&src);
    let mut out = String::from(
        "/// Size of what `p` points to.\nfn pointee_size<T>(_: *const T) -> usize {\n    std::mem::size_of::<T>()\n}\n\n\
         /// (C expression, Rust value) for every C-named struct and union of `sys` and each of its fields.\n\
         #[allow(clippy::too_many_lines)]\nfn layout_table() -> Vec<(&'static str, usize)> {\n    vec![\n",
    );
    for (name, item) in &items {
        // bindgen's stand-in for a type the headers only declare (`_address: u8`)
        // or of an incomplete type (no public fields)
        let opaque = item.fields.is_empty() || item.fields.iter().any(|(f, _)| f == "_address");
        if !has_c_name(name) || opaque {
            continue;
        }
        let kind = if item.union { "union" } else { "struct" };
        let _ = writeln!(out, "    (\"sizeof({kind} {name})\", std::mem::size_of::<sys::{name}>()),");
        let _ = writeln!(out, "    (\"_Alignof({kind} {name})\", std::mem::align_of::<sys::{name}>()),");
        fields(&items, name, kind, name, "", "", &mut out);
    }
    out.push_str("    ]\n}\n");
    let dst = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("layout_table.rs");
    std::fs::write(dst, out).expect("write layout_table.rs");
}
