//! The list of top-level HDL configurations, `boards/synth/configs.txt`.
//!
//! `scripts/lint-hdl.sh` reads the same file, so the grammar is kept to what a shell `read`
//! splits: whitespace-separated words, `#` comments, two directives.
//!
//! ```text
//! fileset NAME ITEM...             a named file list
//! config  NAME TOP PARAMS ITEM...  one top-level configuration
//! board   NAME TOP PARAMS ITEM...  a board top level: linted, and elaborated by Yosys
//! ```
//!
//! `ITEM` is a file under `hdl/rtl/` (a plain name), a file relative to the workspace root
//! (a path with a `/`, e.g. `boards/alveo-u250/roce_u250_top.sv`; no `..`), or `@NAME` of a
//! fileset defined above; `PARAMS` is `K=V[,K=V...]` or `-`. Packages (`*_pkg.sv`) must come
//! before other files.
//!
//! A `board` line differs from a `config` line only in what roce-synth does with it: a
//! board top level instantiates vendor IP (black-box stubs) around the whole engine, whose
//! synthesis the `engine` configuration already covers, so it is elaborated
//! ([`crate::yosys::Flow::Elab`]: every module found, every port matched, processes
//! converted, `check`) rather than synthesized again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Path of the list inside the workspace.
pub const CONFIGS_PATH: &str = "boards/synth/configs.txt";
/// Directory the file names are relative to, inside the workspace.
pub const RTL_DIR: &str = "hdl/rtl";

/// One top-level configuration: a module, its parameter overrides and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Unique name, e.g. `icrc_tx_512`.
    pub name: String,
    /// Top module.
    pub top: String,
    /// Parameter overrides in the order given.
    pub params: Vec<(String, String)>,
    /// File items (see [`workspace_path`]), packages first.
    pub files: Vec<String>,
    /// A `board` line: elaborated, not synthesized.
    pub board: bool,
}

/// Where a file item lives, relative to the workspace root: a plain name is under
/// `hdl/rtl/`, a path with a `/` is taken as it is.
pub fn workspace_path(item: &str) -> PathBuf {
    if item.contains('/') {
        PathBuf::from(item)
    } else {
        Path::new(RTL_DIR).join(item)
    }
}

impl Config {
    /// `DATA_W=512,INSERT=1`, or `-` without overrides.
    pub fn params_text(&self) -> String {
        if self.params.is_empty() {
            return "-".to_string();
        }
        self.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
    }

    /// Paths of the files in a copy laid out by item name under `dir` (the snapshot
    /// roce-synth reads, [`crate::flow::snapshot`]), checking that each exists.
    pub fn paths(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.checked(self.files.iter().map(|f| dir.join(f)))
    }

    /// Paths of the files in the workspace at `root` ([`workspace_path`]), checking that
    /// each exists.
    pub fn source_paths(&self, root: &Path) -> Result<Vec<PathBuf>> {
        self.checked(self.files.iter().map(|f| root.join(workspace_path(f))))
    }

    fn checked(&self, paths: impl Iterator<Item = PathBuf>) -> Result<Vec<PathBuf>> {
        paths
            .map(|p| if p.is_file() { Ok(p) } else { Err(Error::MissingFile { config: self.name.clone(), path: p }) })
            .collect()
    }
}

/// Read and parse the list at `path`.
pub fn load(path: &Path) -> Result<Vec<Config>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.to_path_buf(), source })?;
    parse(&text, path)
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

fn is_file_item(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|ch| ch.is_ascii_alphanumeric() || "_./-".contains(ch))
        && s.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

/// Parse the text of a list; `path` is only used in error messages.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Config>> {
    let mut filesets: HashMap<String, Vec<String>> = HashMap::new();
    let mut configs: Vec<Config> = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        let err = |msg: String| Error::Config { path: path.to_path_buf(), line, msg };
        let content = raw.split('#').next().unwrap_or("");
        let words: Vec<&str> = content.split_whitespace().collect();
        let Some((&directive, rest)) = words.split_first() else { continue };
        let expand = |items: &[&str]| -> Result<Vec<String>> {
            let mut out = Vec::new();
            for item in items {
                if let Some(set) = item.strip_prefix('@') {
                    let files = filesets.get(set).ok_or_else(|| err(format!("unknown fileset `{item}`")))?;
                    out.extend(files.iter().cloned());
                } else if is_file_item(item) {
                    out.push((*item).to_string());
                } else {
                    return Err(err(format!("bad file item `{item}`")));
                }
            }
            Ok(out)
        };
        match directive {
            "fileset" => {
                let [name, items @ ..] = rest else {
                    return Err(err("usage: fileset NAME ITEM...".into()));
                };
                if items.is_empty() {
                    return Err(err("usage: fileset NAME ITEM...".into()));
                }
                let files = expand(items)?;
                if filesets.insert((*name).to_string(), files).is_some() {
                    return Err(err(format!("fileset `{name}` defined twice")));
                }
            }
            "config" | "board" => {
                let usage = || err(format!("usage: {directive} NAME TOP PARAMS ITEM..."));
                let [name, top, params, items @ ..] = rest else {
                    return Err(usage());
                };
                if items.is_empty() {
                    return Err(usage());
                }
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                    return Err(err(format!("bad config name `{name}`")));
                }
                if configs.iter().any(|c| c.name == *name) {
                    return Err(err(format!("config `{name}` defined twice")));
                }
                if !is_ident(top) {
                    return Err(err(format!("bad top module name `{top}`")));
                }
                let params = parse_params(params).map_err(err)?;
                let files = expand(items)?;
                check_order(&files).map_err(err)?;
                configs.push(Config {
                    name: (*name).to_string(),
                    top: (*top).to_string(),
                    params,
                    files,
                    board: directive == "board",
                });
            }
            other => return Err(err(format!("unknown directive `{other}` (expected fileset, config or board)"))),
        }
    }
    if configs.is_empty() {
        return Err(Error::Config { path: path.to_path_buf(), line: 0, msg: "no `config` or `board` lines".into() });
    }
    Ok(configs)
}

fn parse_params(text: &str) -> std::result::Result<Vec<(String, String)>, String> {
    if text == "-" {
        return Ok(Vec::new());
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for kv in text.split(',') {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("bad parameter `{kv}` (expected NAME=VALUE)"))?;
        if !is_ident(k) || v.is_empty() || v.contains(['=', '"']) {
            return Err(format!("bad parameter `{kv}` (expected NAME=VALUE, no quotes)"));
        }
        if out.iter().any(|(name, _)| name == k) {
            return Err(format!("parameter `{k}` given twice"));
        }
        out.push((k.to_string(), v.to_string()));
    }
    Ok(out)
}

fn check_order(files: &[String]) -> std::result::Result<(), String> {
    let mut seen_module = None;
    for (i, f) in files.iter().enumerate() {
        if files[..i].contains(f) {
            return Err(format!("file `{f}` listed twice"));
        }
        if f.ends_with("_pkg.sv") {
            if let Some(m) = seen_module {
                return Err(format!("package `{f}` comes after `{m}`: list packages first"));
            }
        } else {
            seen_module.get_or_insert(f);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Vec<Config>> {
        parse(text, Path::new("configs.txt"))
    }

    #[test]
    fn parses_filesets_and_params() {
        let c = p("# c\nfileset a x_pkg.sv y.sv # tail\nfileset b @a z.sv\n\
                   config  one  top_m  A=1,B=2  @b w.sv\nconfig two t - y.sv\n")
        .unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name, "one");
        assert_eq!(c[0].top, "top_m");
        assert_eq!(c[0].params, vec![("A".into(), "1".into()), ("B".into(), "2".into())]);
        assert_eq!(c[0].files, vec!["x_pkg.sv", "y.sv", "z.sv", "w.sv"]);
        assert_eq!(c[0].params_text(), "A=1,B=2");
        assert!(c[1].params.is_empty());
        assert_eq!(c[1].params_text(), "-");
        assert!(!c[0].board && !c[1].board);
    }

    #[test]
    fn board_lines_and_workspace_paths() {
        let c = p("fileset e a_pkg.sv b.sv\nboard top t N=1 @e boards/x/stub.sv boards/x/t.sv\n").unwrap();
        assert!(c[0].board);
        assert_eq!(c[0].files, vec!["a_pkg.sv", "b.sv", "boards/x/stub.sv", "boards/x/t.sv"]);
        assert_eq!(workspace_path("b.sv"), Path::new("hdl/rtl/b.sv"));
        assert_eq!(workspace_path("boards/x/t.sv"), Path::new("boards/x/t.sv"));
        for bad in ["../x.sv", "boards/../x.sv", "/etc/x.sv", "a//b.sv", "./x.sv"] {
            let e = p(&format!("config a t - {bad}\n")).unwrap_err().to_string();
            assert!(e.contains("bad file item"), "{bad}: {e}");
        }
        let e = p("board a t -\n").unwrap_err().to_string();
        assert!(e.contains("usage: board"), "{e}");
    }

    #[test]
    fn rejects_bad_lines_with_line_numbers() {
        let cases = [
            ("config a t - @nope\n", "unknown fileset"),
            ("\nconfig a t X y.sv\n", "bad parameter"),
            ("config a t A=1,A=2 y.sv\n", "given twice"),
            ("config a t - y.sv x_pkg.sv\n", "list packages first"),
            ("config a t - y.sv\nconfig a t - y.sv\n", "defined twice"),
            ("config a t -\n", "usage"),
            ("module a\n", "unknown directive"),
            ("config a t A=\"s\" y.sv\n", "bad parameter"),
            ("config a 9t - y.sv\n", "bad top"),
            ("# nothing\n", "no `config` or `board`"),
        ];
        for (text, want) in cases {
            let e = p(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.starts_with("configs.txt:"), "{e}");
        }
        let e = p("\nconfig a t X y.sv\n").unwrap_err().to_string();
        assert!(e.starts_with("configs.txt:2:"), "{e}");
    }

    #[test]
    fn the_checked_in_list_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("synth/configs.txt");
        let configs = load(&path).unwrap();
        assert!(configs.iter().any(|c| c.name == "icrc_tx_512"));
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for c in &configs {
            c.source_paths(&root).unwrap();
        }
    }
}
