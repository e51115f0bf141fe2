//! The docs quote the guard's refusal as `guard::message::in_use` writes it.

use std::path::Path;

use guard::capi::Template;
use guard::decision::Referrer;
use guard::message::in_use;
use guard::testing::{known_referrer, metal3_template};

use super::read;

fn template() -> Template {
    metal3_template("t", "ns")
}

fn referrer(kind: &str, name: &str, field: &str) -> Referrer {
    known_referrer(kind, name, field)
}

/// Each quote of the refusal in README.md, CONTRIBUTING.md and docs/, from "is still in use" to
/// its first "..." (or the end of the quote), opens the sentence `in_use` writes for the referrer
/// it names. Rewording the refusal fails here until the docs follow.
pub fn the_docs_quote_the_refusal_as_written(root: &Path) {
    let docs = std::fs::read_dir(root.join("docs")).expect("docs/ is read");
    let mut files: Vec<String> = docs
        .map(|e| {
            e.expect("docs/ is listed")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    files.sort();
    files.extend(["README.md", "CONTRIBUTING.md"].map(String::from));
    let mut quotes = 0;
    for file in &files {
        let text = read(root, file);
        for (at, _) in text.match_indices("is still in use") {
            let rest = &text[at..];
            let end = ["...", "`", "\n"].iter().filter_map(|m| rest.find(m)).min();
            let quote = rest[..end.unwrap_or(rest.len())].trim_end();
            let named = quote
                .split_once("It is referenced by ")
                .and_then(|(_, by)| {
                    let (kind, rest) = by.split_once(' ')?;
                    let (name, rest) = rest.split_once(" (")?;
                    Some(referrer(kind, name, rest.split_once(')')?.0))
                });
            let named = named.unwrap_or_else(|| referrer("MachineDeployment", "md", "f"));
            let written = in_use(&template(), &[named]);
            let at = written
                .find("is still in use")
                .expect("the refusal says the template is still in use");
            let tail = &written[at..];
            assert!(
                tail.starts_with(quote),
                "{file}: {quote:?} is not what the guard writes: {tail:?}"
            );
            quotes += 1;
        }
    }
    assert!(
        quotes >= 7,
        "{quotes} quotes of the refusal found in {files:?}"
    );
}
