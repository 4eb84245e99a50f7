//! The files generated from the host contract are committed and current, `roce-gen-hdl`
//! regenerates them, and the Markdown reference covers every register, field, descriptor
//! field and code.

use std::path::Path;

use roce_model::contract::{self, regs, FieldKind, LAYOUTS};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn committed_files_are_current() {
    let mut stale = Vec::new();
    for (rel, text) in contract::generated_files() {
        let current = std::fs::read_to_string(root().join(rel)).unwrap_or_default();
        if current != text {
            stale.push(rel);
        }
    }
    assert!(stale.is_empty(), "stale generated file(s) {stale:?}: run `cargo run -p roce-model --bin roce-gen-hdl`");
}

#[test]
fn roce_gen_hdl_covers_the_contract_files() {
    let all = roce_model::hdlgen::generated_files();
    for (rel, text) in contract::generated_files() {
        let found =
            all.iter().find(|(p, _)| *p == rel).unwrap_or_else(|| panic!("{rel} not in hdlgen::generated_files"));
        assert_eq!(found.1, text, "{rel}");
    }
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(contract::generated_files(), contract::generated_files());
}

#[test]
fn markdown_covers_everything() {
    let md = contract::md::register_map();
    for r in regs::ALL {
        assert!(md.contains(&format!("#### {}\n", r.name)), "register {} has no section", r.name);
        for f in r.fields {
            assert!(md.contains(&format!("| `{}` |", f.name)), "{}.{}", r.name, f.name);
        }
    }
    for l in LAYOUTS {
        assert!(md.contains(&format!("### {}\n", l.name)), "layout {}", l.name);
        for f in l.fields {
            assert!(md.contains(&format!("| {} | {} | `{}` |", f.offset, f.size, f.name)), "{}.{}", l.name, f.name);
            match f.kind {
                FieldKind::Enum(e) => {
                    assert!(md.contains(&format!("#### {}\n", e.name)), "enum {}", e.name);
                    for v in e.variants {
                        assert!(md.contains(&format!("| 0x{:02X} | `{}` |", v.code, v.name)), "{}::{}", e.name, v.name);
                    }
                }
                FieldKind::Bits(b) => {
                    assert!(md.contains(&format!("#### {}\n", b.name)), "bits {}", b.name);
                    for bit in b.bits {
                        assert!(md.contains(&format!("| `{}` |", bit.name)), "{}.{}", b.name, bit.name);
                    }
                }
                _ => {}
            }
        }
        for r in l.reserved() {
            assert!(md.contains(&format!("| {} | {} | *reserved* |", r.start, r.len())), "{} reserved {r:?}", l.name);
        }
    }
    for t in contract::QP_TRANSITIONS {
        let from = t.from.map(|s| s.name()).unwrap_or("any");
        assert!(md.contains(&format!("| {from} | {} |", t.to.name())), "transition {from} -> {:?}", t.to);
    }
    for heading in ["## Command protocol", "## Queue protocol", "### Completions: phase bit", "### Arming and events"] {
        assert!(md.contains(heading), "{heading}");
    }
    // Every intra-document link has a target heading.
    let anchors: Vec<String> = md
        .lines()
        .filter_map(|l| l.trim_start_matches('#').strip_prefix(' ').filter(|_| l.starts_with('#')))
        .map(|h| {
            h.to_ascii_lowercase()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    for a in &anchors {
        assert!(seen.insert(a), "duplicate heading anchor #{a}");
    }
    for (i, _) in md.match_indices("](#") {
        let rest = &md[i + 3..];
        let target = &rest[..rest.find(')').unwrap()];
        assert!(anchors.iter().any(|a| a == target), "link #{target} has no heading");
    }
}
