//! The import graph of `src/`, file -> file. A path (`use crate::a::B`,
//! `super::B`, `b::C` after `mod b;`, or such a path written inline) is
//! resolved to the file that defines the item it names, following `use`
//! re-exports, so a facade `mod.rs` that only re-exports is no step of a
//! circle; a `pub use` is an edge only where its own file uses the name.
//! An inline `#[cfg(test)] mod tests` is a node of its own, as a
//! `tests.rs` file is.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::source::{File, identifiers, is_ident, use_spans};

/// A file, or an inline test module of one (`admin/mod.rs::tests`).
pub type Node = String;

pub struct Graph {
    /// Every node, and each of its imports with the names taken.
    pub edges: BTreeMap<Node, BTreeMap<Node, BTreeSet<String>>>,
}

struct Tree<'a> {
    files: &'a [File],
    by_module: HashMap<Vec<String>, usize>,
}

impl Graph {
    pub fn of(files: &[File]) -> Graph {
        let tree = Tree {
            files,
            by_module: files
                .iter()
                .enumerate()
                .map(|(i, f)| (f.module.clone(), i))
                .collect(),
        };
        let mut edges: BTreeMap<Node, BTreeMap<Node, BTreeSet<String>>> = BTreeMap::new();
        for (index, file) in files.iter().enumerate() {
            edges.entry(file.path.clone()).or_default();
            for inline in file.inline.iter().filter(|m| m.test) {
                edges.entry(test_node(file, &inline.name)).or_default();
            }
            for (at, path) in tree.references(index) {
                let from = tree.node_at(index, at);
                if let Some((to, name)) = tree.resolve(&tree.module_at(index, at), &path, 0)
                    && to != index
                {
                    edges
                        .entry(from)
                        .or_default()
                        .entry(files[to].path.clone())
                        .or_default()
                        .insert(name.unwrap_or_else(|| "(module)".to_owned()));
                }
            }
        }
        Graph { edges }
    }

    /// Every set of nodes that import each other round (Tarjan's strongly
    /// connected components of more than one node).
    pub fn circles(&self) -> Vec<Vec<Node>> {
        let mut state = Tarjan {
            graph: self,
            index: HashMap::new(),
            low: HashMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            next: 0,
            found: Vec::new(),
        };
        for node in self.edges.keys() {
            if !state.index.contains_key(node) {
                state.visit(node);
            }
        }
        state.found.retain(|c| c.len() > 1);
        state.found
    }
}

fn test_node(file: &File, name: &str) -> Node {
    format!("{}::{name}", file.path)
}

impl Tree<'_> {
    /// Every path the file names: its `use` paths (a `pub use` only when
    /// the file's own code uses the name) and the paths written inline
    /// outside `use` lines, with where each is.
    fn references(&self, index: usize) -> Vec<(usize, Vec<String>)> {
        let file = &self.files[index];
        let spans = use_spans(&file.code);
        let mut outside = file.code.clone();
        for (start, end, _, _) in spans.iter().rev() {
            outside.replace_range(start..end, &" ".repeat(end - start));
        }
        let used_here: BTreeSet<&str> = identifiers(&outside).into_iter().map(|(_, w)| w).collect();
        let mut found: Vec<(usize, Vec<String>)> = file
            .uses
            .iter()
            .filter(|u| !u.public || used_here.contains(u.alias.as_str()))
            .map(|u| (u.at, u.path.clone()))
            .collect();
        found.extend(inline_paths(&outside));
        found
    }

    /// The module a position of a file is in (inline modules count).
    fn module_at(&self, index: usize, at: usize) -> Vec<String> {
        let file = &self.files[index];
        let mut module = file.module.clone();
        for inline in &file.inline {
            if inline.start <= at && at < inline.end {
                module.push(inline.name.clone());
            }
        }
        module
    }

    fn node_at(&self, index: usize, at: usize) -> Node {
        let file = &self.files[index];
        file.inline
            .iter()
            .find(|m| m.test && m.start <= at && at < m.end)
            .map_or_else(|| file.path.clone(), |m| test_node(file, &m.name))
    }

    /// The file holding a module path (an inline module is in its file's).
    fn file_of(&self, module: &[String]) -> Option<usize> {
        (0..=module.len())
            .rev()
            .find_map(|n| self.by_module.get(&module[..n]).copied())
    }

    fn has_inline(&self, module: &[String], name: &str) -> bool {
        self.file_of(module).is_some_and(|f| {
            self.files[f].module.len() == module.len()
                && self.files[f].inline.iter().any(|m| m.name == name)
        })
    }

    /// The file defining what `path` names from `current`, and the name.
    fn resolve(
        &self,
        current: &[String],
        path: &[String],
        depth: u32,
    ) -> Option<(usize, Option<String>)> {
        let first = path.first()?;
        if depth > 16 {
            return None;
        }
        let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "super" | "self" => {
                let mut base = current.to_vec();
                let mut rest = path;
                while let Some(step) = rest.first().filter(|s| *s == "super" || *s == "self") {
                    if step == "super" {
                        base.pop();
                    }
                    rest = &rest[1..];
                }
                (base, rest)
            }
            _ => {
                let mut child = current.to_vec();
                child.push(first.clone());
                if self.by_module.contains_key(&child) || self.has_inline(current, first) {
                    (current.to_vec(), path)
                } else {
                    // A name this module imported: `use crate::ingest; ingest::X`.
                    return self.through_import(current, first, &path[1..], depth);
                }
            }
        };
        let mut taken = 0;
        for segment in rest {
            base.push(segment.clone());
            if self.by_module.contains_key(&base) {
                taken += 1;
            } else {
                base.pop();
                break;
            }
        }
        let file = self.file_of(&base)?;
        let Some(name) = rest.get(taken) else {
            return Some((file, None));
        };
        if name == "*" || self.files[file].defines.contains(name) {
            return Some((file, Some(name.clone())));
        }
        // A re-export: `pub use child::Name` (or a glob) in that module.
        for u in &self.files[file].uses {
            let module_there = self.module_at(file, u.at);
            if module_there != base {
                continue;
            }
            if &u.alias == name {
                if let Some(found) = self.resolve(&base, &u.path, depth + 1) {
                    return Some(found);
                }
            } else if u.path.last().is_some_and(|s| s == "*") {
                let mut through = u.path[..u.path.len() - 1].to_vec();
                through.push(name.clone());
                if let Some((f, n)) = self.resolve(&base, &through, depth + 1)
                    && self.files[f].defines.contains(name)
                {
                    return Some((f, n));
                }
            }
        }
        Some((file, Some(name.clone())))
    }

    fn through_import(
        &self,
        current: &[String],
        first: &str,
        rest: &[String],
        depth: u32,
    ) -> Option<(usize, Option<String>)> {
        let file = self.file_of(current)?;
        let imported = self.files[file].uses.iter().find(|u| {
            u.alias == first
                && matches!(
                    u.path.first().map(String::as_str),
                    Some("crate" | "super" | "self")
                )
                && self.module_at(file, u.at) == current
        })?;
        let mut path = imported.path.clone();
        path.extend(rest.iter().cloned());
        self.resolve(current, &path, depth + 1)
    }
}

/// Paths written in code (`a::b::C`), not preceded by `::` or a name.
fn inline_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let starts = code[i..].chars().next().is_some_and(is_ident)
            && (i == 0 || !code[..i].chars().next_back().is_some_and(is_ident))
            && !(i >= 2 && &bytes[i - 2..i] == b"::");
        if !starts {
            i += code[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let len = code[j..]
                .chars()
                .take_while(|c| is_ident(*c))
                .map(char::len_utf8)
                .sum::<usize>();
            if len == 0 {
                break;
            }
            segments.push(code[j..j + len].to_owned());
            j += len;
            if code[j..].starts_with("::") {
                j += 2;
            } else {
                break;
            }
        }
        if segments.len() > 1 {
            found.push((i, segments));
        }
        i = j.max(i + 1);
    }
    found
}

struct Tarjan<'a> {
    graph: &'a Graph,
    index: HashMap<Node, usize>,
    low: HashMap<Node, usize>,
    stack: Vec<Node>,
    on_stack: BTreeSet<Node>,
    next: usize,
    found: Vec<Vec<Node>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, node: &Node) {
        self.index.insert(node.clone(), self.next);
        self.low.insert(node.clone(), self.next);
        self.next += 1;
        self.stack.push(node.clone());
        self.on_stack.insert(node.clone());
        let graph = self.graph;
        for to in graph.edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            if !self.index.contains_key(to) {
                self.visit(to);
                let low = self.low[node].min(self.low[to]);
                self.low.insert(node.clone(), low);
            } else if self.on_stack.contains(to) {
                let low = self.low[node].min(self.index[to]);
                self.low.insert(node.clone(), low);
            }
        }
        if self.low[node] == self.index[node] {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack.remove(&member);
                let done = &member == node;
                component.push(member);
                if done {
                    break;
                }
            }
            component.sort();
            self.found.push(component);
        }
    }
}
