//! Workspace conventions, checked as a test (the house style's `tidy`).
//!
//! - every dependency of every member is declared once, in `[workspace.dependencies]`, and members
//!   write `x.workspace = true` (internal crates too), and every workspace dependency is used by
//!   a member;
//! - every member inherits the workspace lints and package metadata;
//! - every library crate uses its README as crate docs and ships it, and renders its features'
//!   `##` comments with `document-features`;
//! - no library crate depends on another library crate except the leaves `squad-model` and
//!   `squad-fs`;
//! - the stated MSRV is the highest `rust-version` of every locked dependency, and the README
//!   states the same;
//! - the license files every crate ships are there;
//! - no source file pulls in another crate's file with `#[path]` (shared test code lives in
//!   `squad-test-support`).
#![expect(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

use std::path::{Path, PathBuf};

use toml::Table;

const LIBRARIES: [&str; 6] = [
    "squad-model",
    "squad-fs",
    "squad-notes",
    "squad-notify",
    "squad-memory",
    "squad-routing",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn manifest(path: &Path) -> Table {
    std::fs::read_to_string(path).unwrap().parse().unwrap()
}

fn members() -> Vec<(String, Table)> {
    let root_manifest = manifest(&root().join("Cargo.toml"));
    root_manifest["workspace"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let dir = m.as_str().unwrap().to_owned();
            let t = manifest(&root().join(&dir).join("Cargo.toml"));
            (dir, t)
        })
        .collect()
}

/// The dependency tables of a member's manifest, named by section: `[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]`, and the same under each `[target.'cfg'...]`.
fn dependency_tables(t: &Table) -> Vec<(String, &Table)> {
    const SECTIONS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut out = Vec::new();
    for section in SECTIONS {
        if let Some(deps) = t.get(section).and_then(|d| d.as_table()) {
            out.push((section.to_owned(), deps));
        }
    }
    for (cfg, target) in t
        .get("target")
        .and_then(|d| d.as_table())
        .into_iter()
        .flatten()
    {
        for section in SECTIONS {
            if let Some(deps) = target.get(section).and_then(|d| d.as_table()) {
                out.push((format!("target.{cfg}.{section}"), deps));
            }
        }
    }
    out
}

#[test]
fn dependencies_come_from_the_workspace() {
    let root_manifest = manifest(&root().join("Cargo.toml"));
    let declared = root_manifest["workspace"]["dependencies"]
        .as_table()
        .unwrap();
    let mut problems = Vec::new();
    for (dir, t) in members() {
        let own_name = t["package"]["name"].as_str().unwrap().to_owned();
        for (section, deps) in dependency_tables(&t) {
            for (name, spec) in deps {
                // A crate may dev-depend on itself to turn on its own test features.
                let self_dep =
                    name == &own_name && spec.get("path").and_then(|p| p.as_str()) == Some(".");
                if self_dep {
                    continue;
                }
                let inherits = spec.get("workspace").and_then(|w| w.as_bool()) == Some(true);
                if !inherits {
                    problems.push(format!(
                        "{dir}: [{section}] {name} does not use `workspace = true`"
                    ));
                }
                if !declared.contains_key(name) {
                    problems.push(format!(
                        "{dir}: [{section}] {name} is missing from [workspace.dependencies]"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_workspace_dependency_is_used() {
    let root_manifest = manifest(&root().join("Cargo.toml"));
    let declared = root_manifest["workspace"]["dependencies"]
        .as_table()
        .unwrap();
    let members = members();
    let unused: Vec<&String> = declared
        .keys()
        .filter(|name| {
            !members.iter().any(|(_, t)| {
                dependency_tables(t)
                    .iter()
                    .any(|(_, deps)| deps.contains_key(name.as_str()))
            })
        })
        .collect();
    assert!(
        unused.is_empty(),
        "declared in [workspace.dependencies] but used by no member: {unused:?}"
    );
}

#[test]
fn members_inherit_lints_and_metadata() {
    let mut problems = Vec::new();
    for (dir, t) in members() {
        if t.get("lints")
            .and_then(|l| l.get("workspace"))
            .and_then(|w| w.as_bool())
            != Some(true)
        {
            problems.push(format!("{dir}: missing `[lints] workspace = true`"));
        }
        for key in ["version", "edition", "rust-version", "license"] {
            let inherited = t["package"]
                .get(key)
                .and_then(|v| v.get("workspace"))
                .and_then(|w| w.as_bool())
                == Some(true);
            if !inherited {
                problems.push(format!("{dir}: package.{key} is not `.workspace = true`"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn libraries_use_their_readme_as_docs_and_respect_the_dependency_rule() {
    let mut problems = Vec::new();
    for lib in LIBRARIES {
        let dir = root().join(lib);
        let lib_rs = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        if !lib_rs.contains(r#"#![doc = include_str!("../README.md")]"#) {
            problems.push(format!(
                "{lib}: src/lib.rs does not include README.md as crate docs"
            ));
        }
        let t = manifest(&dir.join("Cargo.toml"));
        let features = t.get("features").and_then(|f| f.as_table());
        if features.is_some_and(|f| f.keys().any(|k| k != "default"))
            && !lib_rs.contains("#![doc = document_features::document_features!()]")
        {
            problems.push(format!(
                "{lib}: src/lib.rs does not render its features with document-features"
            ));
        }
        let include = t["package"].get("include").and_then(|i| i.as_array());
        if !include.is_some_and(|i| i.iter().any(|v| v.as_str() == Some("README.md"))) {
            problems.push(format!("{lib}: package.include does not ship README.md"));
        }
        if let Some(deps) = t.get("dependencies").and_then(|d| d.as_table()) {
            for other in LIBRARIES {
                let leaf = matches!(other, "squad-model" | "squad-fs");
                if other != lib && !leaf && deps.contains_key(other) {
                    problems.push(format!(
                        "{lib}: depends on {other}; libraries may depend only on squad-model and squad-fs"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Parses `1.89` or `1.89.0` into (major, minor, patch).
fn version(text: &str) -> (u64, u64, u64) {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().unwrap());
    (
        parts.next().unwrap(),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

#[test]
fn the_stated_msrv_is_the_highest_of_every_locked_dependency() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (highest, who) = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"].is_string())
        .filter_map(|p| {
            let rv = p["rust_version"].as_str()?;
            Some((version(rv), format!("{} {}", p["name"], p["version"])))
        })
        .max()
        .unwrap();
    let root_manifest = manifest(&root().join("Cargo.toml"));
    let stated = root_manifest["workspace"]["package"]["rust-version"]
        .as_str()
        .unwrap();
    assert_eq!(
        version(stated),
        highest,
        "rust-version {stated} in Cargo.toml, but {who} needs {highest:?}"
    );
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let short = format!("Rust {}.{} or newer", highest.0, highest.1);
    assert!(readme.contains(&short), "README.md must say \"{short}\"");
}

#[test]
fn every_crate_ships_both_licenses() {
    let mut problems = Vec::new();
    for dir in [".", "squad-cli"].into_iter().chain(LIBRARIES) {
        for file in ["LICENSE-MIT", "LICENSE-APACHE"] {
            if !root().join(dir).join(file).is_file() {
                problems.push(format!("{dir}/{file} is missing"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every `.rs` file under `dir`, skipping `target/`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_path_attribute_reaches_into_another_crate() {
    let mut problems = Vec::new();
    for (dir, _) in members() {
        let crate_dir = root().join(&dir);
        let mut files = Vec::new();
        rust_files(&crate_dir, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (i, line) in text.lines().enumerate() {
                let Some(rest) = line.trim().strip_prefix("#[path = \"") else {
                    continue;
                };
                let target = rest.split('"').next().unwrap();
                let mut resolved = file.parent().unwrap().to_path_buf();
                for part in Path::new(target).components() {
                    match part {
                        std::path::Component::ParentDir => {
                            resolved.pop();
                        }
                        std::path::Component::Normal(p) => resolved.push(p),
                        _ => {}
                    }
                }
                if !resolved.starts_with(&crate_dir) {
                    problems.push(format!(
                        "{}:{}: #[path = \"{target}\"] leaves {dir}",
                        file.strip_prefix(root()).unwrap().display(),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
