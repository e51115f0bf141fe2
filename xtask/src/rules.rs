//! The one formatter of rules, for the guard's admission rules and every ClusterRole rule the
//! repository generates: `apiGroups`, then `apiVersions` where there is one, `resources`, and the
//! rule's operations or verbs.

/// One rule: a group, its resources, and what closes it.
pub struct Rule<'a> {
    pub group: &'a str,
    pub resources: Vec<&'a str>,
    /// An admission rule's `apiVersions: ["*"]`, or none (RBAC).
    pub every_version: bool,
    /// `operations: [...]` or `verbs: [...]`.
    pub last: String,
}

/// `key: ["a", "b"]`.
pub fn flow(key: &str, items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("\"{i}\"")).collect();
    format!("{key}: [{}]", quoted.join(", "))
}

impl Rule<'_> {
    /// The rule's lines, unindented: up to `inline` resources go on one line, more an item a line.
    fn lines(&self, inline: usize) -> Vec<String> {
        let mut out = vec![flow("apiGroups", &[self.group])];
        if self.every_version {
            out.push(flow("apiVersions", &["*"]));
        }
        if self.resources.len() <= inline {
            out.push(flow("resources", &self.resources));
        } else {
            out.push("resources:".into());
            out.extend(self.resources.iter().map(|r| format!("  - {r}")));
        }
        out.push(self.last.clone());
        out
    }
}

/// `rules` as the items of a YAML list at `indent`.
pub fn list(indent: usize, rules: &[Rule], inline: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for rule in rules {
        for (i, line) in rule.lines(inline).iter().enumerate() {
            let mark = if i == 0 { "- " } else { "  " };
            out += &format!("{pad}{mark}{line}\n");
        }
    }
    out
}

/// `rules` as JSON-patch operations at `indent` that add each to a ClusterRole's rules.
pub fn added(indent: usize, rules: &[Rule], inline: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for rule in rules {
        out += &format!("{pad}- op: add\n{pad}  path: /rules/-\n{pad}  value:\n");
        for line in rule.lines(inline) {
            out += &format!("{pad}    {line}\n");
        }
    }
    out
}
