//! Every relative link in the Markdown docs (README, BENCHMARKS, `docs/`)
//! names a file that exists, and every `#anchor` a heading of its target,
//! as GitHub renders them: a moved section or a renamed file breaks a test,
//! not a reader's click. (lychee checks the same offline; it takes 8
//! minutes to build, so CI relies on this test.)

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// to hyphens; a repeated one gets `-1`, `-2`, ...
fn anchors(text: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    for line in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while !found.insert(candidate.clone()) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
    }
    found
}

/// Every `](target)` of the file's prose, without inline code spans.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose(text) {
        let without_code: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect();
        for piece in without_code.split("](").skip(1) {
            if let Some(end) = piece.find(')') {
                found.push(piece[..end].to_owned());
            }
        }
    }
    found
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("BENCHMARKS.md")];
    files.extend(files_under(&root().join("docs"), "md"));
    files
}

/// Every file under `folder`, at any depth, with this extension, sorted.
pub fn files_under(folder: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// What a relative link in `file` names: the file itself for a bare
/// `#anchor`, and the fragment.
pub fn link_target<'a>(file: &Path, link: &'a str) -> (PathBuf, &'a str) {
    let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap().join(path)
    };
    (target, fragment)
}

fn broken(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut broken = Vec::new();
    for link in links(&text) {
        if link.contains("://") || link.starts_with("mailto:") {
            continue;
        }
        let (target, fragment) = link_target(file, &link);
        if !target.exists() {
            broken.push(format!("{link}: no file {}", target.display()));
            continue;
        }
        if !fragment.is_empty() && target.extension().is_some_and(|e| e == "md") {
            let headings = anchors(&std::fs::read_to_string(&target).unwrap());
            if !headings.contains(fragment) {
                broken.push(format!("{link}: no heading #{fragment}"));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let files = markdown_files();
    assert!(files.len() >= 30, "{files:?}");
    let mut checked = 0;
    for file in &files {
        checked += links(&std::fs::read_to_string(file).unwrap()).len();
        assert_eq!(broken(file), Vec::<String>::new(), "{}", file.display());
    }
    assert!(checked > 30, "only {checked} links found");
}

#[test]
fn a_missing_file_or_heading_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.md");
    std::fs::write(
        &file,
        "# Top\n## Once per event, once per payment\n[ok](#once-per-event-once-per-payment) \
         [self](#top) `[code](#nowhere)`\n[gone](b.md) [anchor](#nowhere)\n```\n[fenced](c.md)\n```\n",
    )
    .unwrap();
    assert_eq!(
        broken(&file),
        [
            format!("b.md: no file {}", dir.path().join("b.md").display()),
            "#nowhere: no heading #nowhere".to_owned(),
        ]
    );
}
