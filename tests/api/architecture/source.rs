//! Reading `src/`: each file's code without comments and literals, what it
//! imports (`use` trees), what it defines, its inline modules, and its
//! string literals (for the SQL check).

use std::collections::HashSet;
use std::path::Path;

/// One file of `src/`.
pub struct File {
    /// Relative to `src/`, with `/`: `admin/mod.rs`.
    pub path: String,
    /// Its module path: `["admin"]` for `admin/mod.rs`, `[]` for `lib.rs`.
    pub module: Vec<String>,
    /// The code, comments out and every literal emptied.
    pub code: String,
    pub uses: Vec<Use>,
    pub defines: HashSet<String>,
    pub inline: Vec<Inline>,
    pub literals: Vec<String>,
}

/// One path of a `use` tree.
pub struct Use {
    pub path: Vec<String>,
    /// The name it is known by here (`as` or the last segment).
    pub alias: String,
    /// `pub use` (any visibility): a re-export.
    pub public: bool,
    /// Where in `code` the `use` starts.
    pub at: usize,
}

/// An inline `mod name { ... }`, by its span in `code`.
pub struct Inline {
    pub name: String,
    pub start: usize,
    pub end: usize,
    /// Under `#[cfg(test)]`: test code, a node of its own.
    pub test: bool,
}

/// Every `.rs` file under `src` but `main.rs` (the binary's, importing the
/// library from outside).
pub fn read_tree(src: &Path) -> Vec<File> {
    let mut paths = Vec::new();
    collect(src, src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter(|path| path != "main.rs")
        .map(|path| {
            let text = std::fs::read_to_string(src.join(&path)).expect("a source file is readable");
            read_file(path, &text)
        })
        .collect()
}

fn collect(root: &Path, dir: &Path, into: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(root, &path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under src/");
            into.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn read_file(path: String, text: &str) -> File {
    let mut module: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
        module.pop();
    }
    let (code, literals) = strip(text);
    let code = without_visibility_paths(&code);
    File {
        uses: uses(&code),
        defines: defines(&code),
        inline: inline_modules(&code),
        path,
        module,
        code,
        literals,
    }
}

/// The code with comments removed and each string, byte string, raw string
/// and char literal replaced by an empty one; and the strings' contents.
fn strip(text: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut literals) = (String::with_capacity(text.len()), Vec::new());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && is_ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some((end, literal)) = raw_string(&chars, i).filter(|_| !prev_ident) {
            literals.push(literal);
            out.push_str("\"\"");
            i = end;
        } else if c == '"' || (c == 'b' && next == Some('"') && !prev_ident) {
            let mut j = if c == 'b' { i + 2 } else { i + 1 };
            let mut literal = String::new();
            while j < chars.len() && chars[j] != '"' {
                if chars[j] == '\\' {
                    j += 1;
                }
                if let Some(&ch) = chars.get(j) {
                    literal.push(ch);
                }
                j += 1;
            }
            literals.push(literal);
            out.push_str("\"\"");
            i = j + 1;
        } else if c == '\'' {
            match char_literal(&chars, i) {
                Some(end) => {
                    out.push_str("' '");
                    i = end;
                }
                // A lifetime or a label: kept.
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    (out, literals)
}

/// `r"..."`, `r#"..."#`, `br"..."` at `i`: where it ends, and its text.
fn raw_string(chars: &[char], i: usize) -> Option<(usize, String)> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return None;
    }
    let start = j + 1;
    let mut k = start;
    while k < chars.len() {
        if chars[k] == '"'
            && chars[k + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return Some((k + 1 + hashes, chars[start..k].iter().collect()));
        }
        k += 1;
    }
    Some((chars.len(), chars[start..].iter().collect()))
}

/// A char literal at `i` (`'x'`, `'\n'`, `'\u{1F600}'`): where it ends;
/// `None` for a lifetime.
fn char_literal(chars: &[char], i: usize) -> Option<usize> {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => {
            let close = chars[i + 2..].iter().position(|c| *c == '\'')?;
            Some(i + 2 + close + 1)
        }
        (Some(_), Some('\'')) => Some(i + 3),
        _ => None,
    }
}

pub fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `pub(in crate::store)` names a module where an item is visible; it uses
/// nothing from it.
fn without_visibility_paths(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("pub(in ") {
        out.push_str(&rest[..at]);
        out.push_str("pub");
        let after = &rest[at..];
        rest = &after[after.find(')').map_or(after.len(), |close| close + 1)..];
    }
    out.push_str(rest);
    out
}

/// Where each `use` (with any visibility) starts and ends, its tree, and
/// whether it is public.
pub fn use_spans(code: &str) -> Vec<(usize, usize, bool, String)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("use ") {
        let at = from + found;
        from = at + 4;
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let Some(end) = code[at..].find(';').map(|e| at + e) else {
            break;
        };
        let before = code[..at].trim_end();
        // `pub use`, `pub(crate) use`, `pub(super) use`.
        let visibility = before
            .strip_suffix(')')
            .and_then(|b| b.rfind('(').map(|open| &b[..open]))
            .unwrap_or(before);
        let public = visibility.ends_with("pub")
            && !visibility[..visibility.len() - 3]
                .chars()
                .next_back()
                .is_some_and(is_ident);
        let start = if public { visibility.len() - 3 } else { at };
        spans.push((start, end + 1, public, code[at + 4..end].to_owned()));
        from = end;
    }
    spans
}

fn uses(code: &str) -> Vec<Use> {
    use_spans(code)
        .into_iter()
        .flat_map(|(at, _, public, tree)| {
            use_tree(&tree).into_iter().map(move |(path, alias)| Use {
                path,
                alias,
                public,
                at,
            })
        })
        .collect()
}

/// `a::{b, c::{d as e}}` as `(["a","b"], "b")`, `(["a","c","d"], "e")`.
fn use_tree(tree: &str) -> Vec<(Vec<String>, String)> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand(&[], &tree, &mut out);
    out
}

fn expand(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, String)>) {
    for part in split_top(tree) {
        let part = part.trim();
        if let Some(open) = part.find('{') {
            let mut head = prefix.to_vec();
            head.extend(segments(&part[..open]));
            let close = part.rfind('}').unwrap_or(part.len());
            expand(&head, &part[open + 1..close], out);
        } else if !part.is_empty() {
            let (path, alias) = match part.split_once(" as ") {
                Some((path, alias)) => (path, Some(alias.trim().to_owned())),
                None => (part, None),
            };
            let mut path_segments = prefix.to_vec();
            path_segments.extend(segments(path));
            if path_segments.last().is_some_and(|s| s == "self") {
                path_segments.pop();
            }
            let alias = alias
                .or_else(|| path_segments.last().cloned())
                .unwrap_or_default();
            out.push((path_segments, alias));
        }
    }
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The parts of a tree separated by commas outside braces.
fn split_top(tree: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    parts
}

/// The identifiers of the code, with where each starts.
pub fn identifiers(code: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in code.char_indices() {
        match (start, is_ident(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                out.push((s, &code[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &code[s..]));
    }
    out
}

/// Every name the file defines (at any depth: a method's name too, which
/// is harmless, since only names that paths name are looked up).
fn defines(code: &str) -> HashSet<String> {
    let words = identifiers(code);
    let mut names = HashSet::new();
    for pair in words.windows(2) {
        let (keyword, name) = (pair[0].1, pair[1].1);
        let item = matches!(
            keyword,
            "fn" | "struct"
                | "enum"
                | "trait"
                | "const"
                | "static"
                | "type"
                | "union"
                | "mod"
                | "macro_rules"
        );
        if item && name != "fn" {
            names.insert(name.to_owned());
        }
    }
    names
}

fn inline_modules(code: &str) -> Vec<Inline> {
    let words = identifiers(code);
    let mut found = Vec::new();
    for pair in words.windows(2) {
        let ((at, keyword), (name_at, name)) = (pair[0], pair[1]);
        if keyword != "mod" {
            continue;
        }
        let after = &code[name_at + name.len()..];
        if !after.trim_start().starts_with('{') {
            continue;
        }
        let open = name_at + name.len() + after.find('{').unwrap_or(0);
        let mut depth = 0;
        let mut end = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let test = code[..at].trim_end().ends_with("#[cfg(test)]");
        found.push(Inline {
            name: name.to_owned(),
            start: at,
            end,
            test,
        });
    }
    found
}
