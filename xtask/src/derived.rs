//! A derived file, whole or a generated part of a hand-written file, and the one freshness check:
//! `gen` writes the stale ones, `check` names them.
//!
//! A generated part sits between two marker lines, `# BEGIN generated: NAME (make manifests)` and
//! `# END generated: NAME`; everything outside the markers is written by hand.

use std::collections::BTreeMap;
use std::path::Path;

/// What one generator gives: a file under the repository's root, whole or one part of it.
pub enum Derived {
    /// The whole file.
    File { path: String, text: String },
    /// The part `name` of `path`, between its markers.
    Part {
        path: &'static str,
        name: &'static str,
        body: String,
    },
}

/// `text` with its generated part `name` replaced by `body`, or why it cannot be.
pub fn with_generated_part(text: &str, name: &str, body: &str) -> Result<String, String> {
    let begin = format!("# BEGIN generated: {name} (make manifests)\n");
    let end = format!("# END generated: {name}");
    let start = text
        .find(&begin)
        .ok_or_else(|| format!("no line `{}`", begin.trim_end()))?
        + begin.len();
    let stop = text[start..]
        .find(&end)
        .ok_or_else(|| format!("no line `{end}` after its BEGIN"))?
        + start;
    // The END marker keeps its indentation: cut back to the start of its line.
    let stop = text[..stop].rfind('\n').map_or(stop, |i| i + 1);
    Ok(format!("{}{body}{}", &text[..start], &text[stop..]))
}

/// The stale files among `derived` (each named with its stale parts), and every file's fresh text.
pub fn freshen(
    root: &Path,
    derived: Vec<Derived>,
) -> Result<(Vec<String>, BTreeMap<String, String>), String> {
    // path -> (text on disk, fresh text, stale parts)
    let mut files: BTreeMap<String, (Option<String>, String, Vec<&str>)> = BTreeMap::new();
    for item in derived {
        match item {
            Derived::File { path, text } => {
                let current = std::fs::read_to_string(root.join(&path)).ok();
                files.insert(path, (current, text, vec![]));
            }
            Derived::Part { path, name, body } => {
                if !files.contains_key(path) {
                    let current = std::fs::read_to_string(root.join(path))
                        .map_err(|e| format!("{path}: {e}"))?;
                    files.insert(path.to_string(), (Some(current.clone()), current, vec![]));
                }
                let Some((_, fresh, parts)) = files.get_mut(path) else {
                    unreachable!("inserted above")
                };
                let next =
                    with_generated_part(fresh, name, &body).map_err(|e| format!("{path}: {e}"))?;
                if next != *fresh {
                    parts.push(name);
                    *fresh = next;
                }
            }
        }
    }
    let mut stale = Vec::new();
    let mut texts = BTreeMap::new();
    for (path, (current, fresh, parts)) in files {
        if current.as_deref() != Some(fresh.as_str()) {
            stale.push(if parts.is_empty() {
                path.clone()
            } else {
                format!("{path} ({})", parts.join(", "))
            });
        }
        texts.insert(path, fresh);
    }
    Ok((stale, texts))
}

#[cfg(test)]
mod tests {
    use super::with_generated_part;

    #[test]
    fn a_stale_part_is_replaced_and_the_rest_kept() {
        let text =
            "a: 1\n  # BEGIN generated: x (make manifests)\n  old\n  # END generated: x\nb: 2\n";
        assert_eq!(
            with_generated_part(text, "x", "  new\n").unwrap(),
            "a: 1\n  # BEGIN generated: x (make manifests)\n  new\n  # END generated: x\nb: 2\n"
        );
        assert!(with_generated_part("a: 1\n", "x", "").is_err());
    }
}
