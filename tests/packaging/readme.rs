//! The README settings table and questions-ui.yml ask for the same settings.

use super::*;

// ---------------------------------------------------------------------------------------------
// README settings table and questions-ui.yml

/// The setting names in the first column of the README table whose header contains `| Setting`.
fn readme_settings() -> BTreeSet<String> {
    let path = root().join("README.md");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "README.md cannot be read ({e}). It must hold the settings table, with the header \
             `| Setting | Type | Default | Description |` and one row per setting, the setting \
             name in backticks in the first column."
        )
    });
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|line| line.contains("| Setting"))
        .unwrap_or_else(|| {
            panic!(
                "README.md has no settings table: no line contains `| Setting`. Add the table \
                 with the header `| Setting | Type | Default | Description |` and one row per \
                 setting, the setting name in backticks in the first column."
            )
        });
    let mut names = BTreeSet::new();
    for line in lines[header + 1..]
        .iter()
        .take_while(|line| !line.trim().is_empty())
    {
        let first = line
            .trim()
            .trim_start_matches('|')
            .split('|')
            .next()
            .unwrap_or("")
            .trim();
        let separator = !first.is_empty() && first.chars().all(|c| matches!(c, '-' | ':' | ' '));
        if separator || first.is_empty() {
            continue;
        }
        let name = match (first.find('`'), first.rfind('`')) {
            (Some(start), Some(end)) if end > start => &first[start + 1..end],
            _ => first,
        };
        assert!(
            names.insert(name.to_string()),
            "README.md settings table lists `{name}` twice"
        );
    }
    assert!(
        !names.is_empty(),
        "README.md settings table (after the `| Setting` header) has no rows"
    );
    names
}

fn questions() -> Vec<Value> {
    seq_at(
        &yaml_file("questions-ui.yml"),
        "/questions",
        "questions-ui.yml",
    )
    .clone()
}

pub(crate) fn question_variables() -> BTreeSet<String> {
    let mut variables = BTreeSet::new();
    for (i, question) in questions().iter().enumerate() {
        let variable = str_at(
            question,
            "/variable",
            &format!("questions-ui.yml questions[{i}]"),
        );
        assert!(
            variables.insert(variable.to_string()),
            "questions-ui.yml asks for `{variable}` twice"
        );
    }
    variables
}

#[test]
fn questions_ui_covers_exactly_the_readme_settings() {
    let readme = readme_settings();
    let questions = question_variables();
    let missing: Vec<_> = readme.difference(&questions).collect();
    let extra: Vec<_> = questions.difference(&readme).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "questions-ui.yml and the README settings table disagree. \
         In the README but not in questions-ui.yml: {missing:?}. \
         In questions-ui.yml but not in the README: {extra:?}."
    );
}

#[test]
fn every_question_is_complete() {
    for (i, question) in questions().iter().enumerate() {
        let what = format!("questions-ui.yml questions[{i}]");
        for key in ["variable", "label", "type", "group"] {
            str_at(question, &format!("/{key}"), &what);
        }
        assert!(
            question.get("default").is_some(),
            "{what} ({}) has no default",
            question["variable"]
        );
        if question["type"] == "enum" {
            let options = strings(
                question
                    .get("options")
                    .unwrap_or_else(|| panic!("{what} is an enum without options")),
                &format!("{what}.options"),
            );
            let default = question["default"].as_str().unwrap_or_default();
            assert!(
                options.iter().any(|o| o == default),
                "{what}: the default {default:?} is not one of the options {options:?}"
            );
        }
    }
}
