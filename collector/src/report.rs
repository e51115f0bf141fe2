//! What a pass prints: one line per template and the closing line, or the same as one JSON
//! document; and its exit code.

use serde::Serialize;
use template_cleanup_core::answer::Outcome;

/// Every candidate was deleted, kept or already gone.
pub const OK: u8 = 0;
/// A DELETE failed.
pub const FAILED: u8 = 1;
/// The pre-flight refused, or the pass could not run: nothing was deleted.
pub const CANNOT_RUN: u8 = 2;

/// A deploy tool's desired state, and what the pass read of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    pub name: String,
    pub read: String,
}

/// One template's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Line {
    pub resource: String,
    pub api_version: String,
    pub namespace: String,
    pub name: String,
    pub age_seconds: i64,
    /// `deleted`, `would delete`, `kept`, `already gone`, `failed`.
    pub verdict: &'static str,
    /// Why it was kept or what failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub dry_run: bool,
    pub guard: String,
    pub sources: Vec<Source>,
    pub templates: Vec<Line>,
    pub deleted: usize,
    pub kept: usize,
    pub failed: usize,
    /// Why the pass did not run (exit 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Report {
    /// Records one candidate's outcome.
    pub fn outcome(&mut self, mut line: Line, outcome: Outcome) {
        let (verdict, detail) = match outcome {
            Outcome::Deleted if self.dry_run => ("would delete", None),
            Outcome::Deleted => ("deleted", None),
            Outcome::Kept(why) => ("kept", Some(why.trim_start_matches("kept: ").to_string())),
            Outcome::Gone => ("already gone", None),
            Outcome::Failed(why) => (
                "failed",
                Some(why.trim_start_matches("failed: ").to_string()),
            ),
        };
        match verdict {
            "kept" => self.kept += 1,
            "failed" => self.failed += 1,
            "already gone" => {}
            _ => self.deleted += 1,
        }
        line.verdict = verdict;
        line.detail = detail;
        self.templates.push(line);
    }

    pub fn exit_code(&self) -> u8 {
        if self.error.is_some() {
            CANNOT_RUN
        } else if self.failed > 0 {
            FAILED
        } else {
            OK
        }
    }

    pub fn closing_line(&self) -> String {
        format!(
            "deleted {}, kept {}, failed {}{}",
            self.deleted,
            self.kept,
            self.failed,
            if self.dry_run { " (dry run)" } else { "" }
        )
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        for source in &self.sources {
            out.push_str(&format!("source {}: {}\n", source.name, source.read));
        }
        for t in &self.templates {
            out.push_str(&format!(
                "{:<12} {} {}/{} (age {})",
                t.verdict,
                t.resource,
                t.namespace,
                t.name,
                age(t.age_seconds)
            ));
            if let Some(detail) = &t.detail {
                out.push_str(&format!(": {detail}"));
            }
            out.push('\n');
        }
        out.push_str(&self.closing_line());
        out.push('\n');
        out
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\":\"cannot render the report: {e}\"}}"))
    }
}

/// `3d4h`, `2h5m`, `7m`, `42s`: the two largest units.
pub fn age(seconds: i64) -> String {
    let (d, h, m, s) = (
        seconds / 86400,
        seconds % 86400 / 3600,
        seconds % 3600 / 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m"),
        (0, _, _) => format!("{h}h{m}m"),
        _ => format!("{d}d{h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(42, "42s")]
    #[case(420, "7m")]
    #[case(7_500, "2h5m")]
    #[case(273_600, "3d4h")]
    fn ages(#[case] seconds: i64, #[case] text: &str) {
        assert_eq!(age(seconds), text);
    }

    fn line() -> Line {
        Line {
            resource: "metal3machinetemplates.infrastructure.cluster.x-k8s.io".into(),
            api_version: "infrastructure.cluster.x-k8s.io/v1beta1".into(),
            namespace: "edge".into(),
            name: "t".into(),
            age_seconds: 3600,
            verdict: "",
            detail: None,
        }
    }

    #[rstest]
    #[case(false, Outcome::Deleted, "deleted      metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/t (age 1h0m)", (1, 0, 0), OK)]
    #[case(true, Outcome::Deleted, "would delete metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/t (age 1h0m)", (1, 0, 0), OK)]
    #[case(false, Outcome::Kept("kept: t is referenced by MachineSet ms".into()), "kept         metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/t (age 1h0m): t is referenced by MachineSet ms", (0, 1, 0), OK)]
    #[case(false, Outcome::Gone, "already gone metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/t (age 1h0m)", (0, 0, 0), OK)]
    #[case(false, Outcome::Failed("failed: 403 Forbidden: no".into()), "failed       metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/t (age 1h0m): 403 Forbidden: no", (0, 0, 1), FAILED)]
    fn one_line_per_template_then_the_closing_line(
        #[case] dry_run: bool,
        #[case] outcome: Outcome,
        #[case] text: &str,
        #[case] counts: (usize, usize, usize),
        #[case] code: u8,
    ) {
        let mut report = Report {
            dry_run,
            ..Report::default()
        };
        report.outcome(line(), outcome);
        let closing = format!(
            "deleted {}, kept {}, failed {}{}",
            counts.0,
            counts.1,
            counts.2,
            if dry_run { " (dry run)" } else { "" }
        );
        assert_eq!(report.text(), format!("{text}\n{closing}\n"));
        assert_eq!(report.exit_code(), code);
        let json: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
        assert_eq!(
            json["templates"][0]["verdict"],
            text.split("  ")
                .next()
                .unwrap()
                .split(" metal3")
                .next()
                .unwrap()
                .trim()
        );
        assert_eq!(json["deleted"], counts.0);
    }

    #[test]
    fn an_error_exits_2_whatever_else_happened() {
        let report = Report {
            error: Some("pre-flight".into()),
            ..Report::default()
        };
        assert_eq!(report.exit_code(), CANNOT_RUN);
    }
}
