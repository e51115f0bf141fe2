//! What a pass prints: one line per template and the closing line, or the same as one JSON
//! document; and its exit code.

use serde::Serialize;
use template_cleanup_core::answer::TemplateOutcome;

use crate::error::Error;

/// Every candidate was deleted, kept, left or already gone.
pub const OK: u8 = 0;
/// A DELETE failed.
pub const FAILED: u8 = 1;
/// The pre-flight refused, or the pass could not run: nothing was deleted.
pub const CANNOT_RUN: u8 = 2;

/// The one sentence that ends every reason a pass stopped before its first DELETE.
pub fn nothing_deleted(reason: &str) -> String {
    format!("{reason} Nothing was deleted.")
}

/// Where each line goes as soon as it is decided (`None`: kept in the report only).
pub type Printer = Option<fn(&str)>;

/// A deploy tool's desired state, and what the pass read of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceLine {
    pub name: String,
    pub read: String,
}

/// One template's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateLine {
    pub resource: String,
    pub api_version: String,
    pub namespace: String,
    pub name: String,
    pub age_seconds: i64,
    /// [`TemplateOutcome::verdict`].
    pub verdict: &'static str,
    /// Why it was kept or left, or what failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The template's kind and uid, for its Event and its Report's result.
    #[serde(skip)]
    pub kind: String,
    #[serde(skip)]
    pub uid: String,
    /// The outcome the verdict and detail were made from (`None` until decided).
    #[serde(skip)]
    pub outcome: Option<TemplateOutcome>,
}

/// How many templates got each verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub deleted: usize,
    pub deletion_started: usize,
    pub kept: usize,
    pub left: usize,
    pub already_gone: usize,
    pub changed: usize,
    pub failed: usize,
    pub not_tried: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub dry_run: bool,
    /// The policy checked (`--policy`).
    pub policy: String,
    pub sources: Vec<SourceLine>,
    /// What the live probe found (`crate::probe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    pub templates: Vec<TemplateLine>,
    #[serde(flatten)]
    pub counts: Counts,
    /// The pass's Events (`crate::events`); `None` in a dry run, which records none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<EventCounts>,
    /// The pass's OpenReports Reports (`crate::openreports`); `None` in a dry run, or when the
    /// pass stopped before its first DELETE.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reports: Option<ReportCounts>,
    /// Why the pass stopped before its first DELETE (exit 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip)]
    pub printer: Printer,
    /// How many of `sources` were printed.
    #[serde(skip)]
    printed_sources: usize,
}

impl Report {
    pub fn new(dry_run: bool, policy: &str, printer: Printer) -> Self {
        Report {
            dry_run,
            policy: policy.to_string(),
            printer,
            ..Report::default()
        }
    }

    fn print(&self, line: &str) {
        if let Some(printer) = self.printer {
            printer(line);
        }
    }

    /// Prints a line that is not a template's: what became of the pass's Events and Reports.
    pub fn say(&self, line: &str) {
        self.print(line);
    }

    /// Prints the sources not printed yet: they come before any template's line.
    fn print_sources(&mut self) {
        for source in &self.sources[self.printed_sources..] {
            self.print(&source_line(source));
        }
        self.printed_sources = self.sources.len();
    }

    /// Records and prints the live probe's finding.
    pub fn probe(&mut self, finding: String) {
        self.print_sources();
        self.print(&format!("probe: {finding}"));
        self.probe = Some(finding);
    }

    /// Prints what a re-check's probe found, after `sent` DELETEs.
    pub fn reprobe(&mut self, sent: usize, finding: &str) {
        self.print(&format!("probe again after {sent} DELETEs: {finding}"));
    }

    /// Records why the pass stopped before its first DELETE.
    pub fn stop(&mut self, error: &Error) {
        self.print_sources();
        self.error = Some(nothing_deleted(&error.to_string()));
    }

    /// Records why the pass stopped after `sent` DELETEs, when the guard was checked again: the
    /// DELETEs sent stand, the rest are `not tried`, and the pass exits 2.
    pub fn halt(&mut self, sent: usize, error: &Error) {
        self.print_sources();
        self.error = Some(format!(
            "The guard was checked again after {sent} DELETEs and has changed: {error} The pass stopped there: the DELETEs already answered stand, and every later template is `not tried`; the next pass tries them again."
        ));
    }

    /// Says that the pass reached its time limit after `sent` DELETEs: the rest are `not tried`,
    /// and the pass still exits as its answers say (a limit reached is no failure).
    pub fn out_of_time(&mut self, sent: usize, limit: std::time::Duration) {
        self.print_sources();
        self.print(&format!(
            "time limit: the pass has run {} (--time-limit) and sends no more DELETEs after {sent}; every later template is `not tried`, and the next pass starts at another quarter of them (docs/cleanup.md).",
            humantime::format_duration(limit)
        ));
    }

    /// Records and prints one template's outcome.
    pub fn outcome(&mut self, mut line: TemplateLine, outcome: TemplateOutcome) {
        self.print_sources();
        line.verdict = outcome.verdict(self.dry_run);
        line.detail = outcome.detail();
        line.outcome = Some(outcome.clone());
        let c = &mut self.counts;
        *match outcome {
            TemplateOutcome::Deleted => &mut c.deleted,
            TemplateOutcome::DeletionStarted => &mut c.deletion_started,
            TemplateOutcome::KeptByGuard(_) | TemplateOutcome::KeptByDecision(_) => &mut c.kept,
            TemplateOutcome::Left(_) => &mut c.left,
            TemplateOutcome::Gone => &mut c.already_gone,
            TemplateOutcome::Changed(_) => &mut c.changed,
            TemplateOutcome::Failed(_) => &mut c.failed,
            TemplateOutcome::NotTried => &mut c.not_tried,
        } += 1;
        self.print(&template_line(&line));
        self.templates.push(line);
    }

    pub fn exit_code(&self) -> u8 {
        if self.error.is_some() {
            CANNOT_RUN
        } else if self.counts.failed > 0 {
            FAILED
        } else {
            OK
        }
    }

    pub fn closing_line(&self) -> String {
        let c = &self.counts;
        format!(
            "deleted {}, deletion started {}, kept {}, left {}, already gone {}, changed {}, failed {}, not tried {}{}",
            c.deleted,
            c.deletion_started,
            c.kept,
            c.left,
            c.already_gone,
            c.changed,
            c.failed,
            c.not_tried,
            if self.dry_run { " (dry run)" } else { "" }
        )
    }

    /// The whole report as text, as printed line by line: sources, probe, templates, closing line.
    #[cfg(test)]
    pub fn text(&self) -> String {
        let mut out = String::new();
        for source in &self.sources {
            out.push_str(&source_line(source));
            out.push('\n');
        }
        if let Some(probe) = &self.probe {
            out.push_str(&format!("probe: {probe}\n"));
        }
        for t in &self.templates {
            out.push_str(&template_line(t));
            out.push('\n');
        }
        let events = self.events.as_ref().map(EventCounts::line);
        for line in events
            .iter()
            .chain(self.reports.as_ref().map(ReportCounts::line).iter())
        {
            out.push_str(line);
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

fn source_line(source: &SourceLine) -> String {
    format!("source {}: {}", source.name, source.read)
}

fn template_line(t: &TemplateLine) -> String {
    let mut out = format!(
        "{:<16} {} {}/{} (age {})",
        t.verdict,
        t.resource,
        t.namespace,
        t.name,
        age(t.age_seconds)
    );
    if let Some(detail) = &t.detail {
        out.push_str(&format!(": {detail}"));
    }
    out
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

/// How the pass's Events went, for its summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventCounts {
    /// `--events-per-pass`.
    pub cap: usize,
    /// Created, or added to an earlier pass's series.
    pub recorded: usize,
    pub new: usize,
    pub series: usize,
    pub over_cap: usize,
    pub failed: usize,
}

impl EventCounts {
    pub fn line(&self) -> String {
        format!(
            "events: {} recorded ({} new, {} added to a series), {} over the cap of {} (--events-per-pass), {} failed",
            self.recorded, self.new, self.series, self.over_cap, self.cap, self.failed
        )
    }
}

/// What the Reports of a pass came to, for its summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportCounts {
    /// The OpenReports CRD is served (at v1alpha1).
    pub installed: bool,
    pub written: usize,
    pub failed: usize,
    /// Results beyond `max_results` in a namespace, left out.
    pub left_out: usize,
    /// Each Report's name, and how many results one holds at most.
    #[serde(skip)]
    pub name: &'static str,
    #[serde(skip)]
    pub max_results: usize,
}

impl ReportCounts {
    pub fn line(&self) -> String {
        if !self.installed {
            return "reports: not written: the OpenReports CRD (reports.openreports.io, v1alpha1) is not installed".into();
        }
        format!(
            "reports: {} written, {} failed (openreports.io/v1alpha1 Report {}, one per namespace; {} results over {} per Report left out)",
            self.written, self.failed, self.name, self.left_out, self.max_results
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use template_cleanup_core::select::Skip;

    #[rstest]
    #[case(42, "42s")]
    #[case(420, "7m")]
    #[case(7_500, "2h5m")]
    #[case(273_600, "3d4h")]
    fn ages(#[case] seconds: i64, #[case] text: &str) {
        assert_eq!(age(seconds), text);
    }

    fn line() -> TemplateLine {
        TemplateLine {
            resource: "metal3machinetemplates.infrastructure.cluster.x-k8s.io".into(),
            api_version: "infrastructure.cluster.x-k8s.io/v1beta1".into(),
            namespace: "edge".into(),
            name: "t".into(),
            age_seconds: 3600,
            verdict: "",
            detail: None,
            kind: "Metal3MachineTemplate".into(),
            uid: "uid-t".into(),
            outcome: None,
        }
    }

    const M3MT: &str = "metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/t (age 1h0m)";

    /// Each outcome: its line, the count it adds to (in the closing line's order: deleted,
    /// deletion started, kept, left, already gone, changed, failed, not tried) and the exit code.
    #[rstest]
    #[case(false, TemplateOutcome::Deleted, "deleted         ", "", 0, OK)]
    #[case(true, TemplateOutcome::Deleted, "would delete    ", "", 0, OK)]
    #[case(false, TemplateOutcome::DeletionStarted, "deletion started", "", 1, OK)]
    #[case(
        true,
        TemplateOutcome::DeletionStarted,
        "would start deletion",
        "",
        1,
        OK
    )]
    #[case(false, TemplateOutcome::KeptByGuard("t is referenced by MachineSet ms".into()), "kept            ", ": t is referenced by MachineSet ms", 2, OK)]
    #[case(
        false,
        TemplateOutcome::Left(Skip::TooYoung),
        "left            ",
        ": younger than --min-age",
        3,
        OK
    )]
    #[case(false, TemplateOutcome::Gone, "already gone    ", "", 4, OK)]
    #[case(false, TemplateOutcome::Changed("the UID in the precondition (a) does not match".into()), "changed         ", ": changed since it was listed, the next pass looks again (the UID in the precondition (a) does not match)", 5, OK)]
    #[case(false, TemplateOutcome::Failed("403 Forbidden: no".into()), "failed          ", ": 403 Forbidden: no", 6, FAILED)]
    #[case(
        false,
        TemplateOutcome::NotTried,
        "not tried       ",
        ": the pass stopped before this DELETE; the next pass tries it",
        7,
        OK
    )]
    fn one_line_per_template_then_the_closing_line(
        #[case] dry_run: bool,
        #[case] outcome: TemplateOutcome,
        #[case] verdict: &str,
        #[case] detail: &str,
        #[case] counted: usize,
        #[case] code: u8,
    ) {
        let mut report = Report::new(dry_run, "capi-template-guard-cleanup", None);
        report.outcome(line(), outcome);
        let mut counts = [0; 8];
        counts[counted] = 1;
        let closing = format!(
            "deleted {}, deletion started {}, kept {}, left {}, already gone {}, changed {}, failed {}, not tried {}{}",
            counts[0],
            counts[1],
            counts[2],
            counts[3],
            counts[4],
            counts[5],
            counts[6],
            counts[7],
            if dry_run { " (dry run)" } else { "" }
        );
        assert_eq!(
            report.text(),
            format!("{verdict} {M3MT}{detail}\n{closing}\n")
        );
        assert_eq!(report.exit_code(), code);
        let json: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
        assert_eq!(json["templates"][0]["verdict"], verdict.trim());
        assert_eq!(json["policy"], "capi-template-guard-cleanup");
        let keys = [
            "deleted",
            "deletionStarted",
            "kept",
            "left",
            "alreadyGone",
            "changed",
            "failed",
            "notTried",
        ];
        for (key, n) in keys.iter().zip(counts) {
            assert_eq!(json[key], n, "{key}");
        }
    }

    thread_local! {
        static PRINTED: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Lines are printed as they are decided, sources first, in the order of the text report.
    #[test]
    fn each_line_is_printed_when_it_is_decided() {
        let mut report = Report {
            printer: Some(|l| PRINTED.with(|p| p.borrow_mut().push(l.to_string()))),
            ..Report::default()
        };
        report.sources.push(SourceLine {
            name: "Flux Kustomizations".into(),
            read: "not installed".into(),
        });
        report.probe("the guard refused".into());
        assert_eq!(PRINTED.with(|p| p.borrow().len()), 2);
        report.outcome(line(), TemplateOutcome::Deleted);
        let printed = PRINTED.with(|p| p.borrow().clone());
        let text = report.text();
        let mut lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.pop(), Some(report.closing_line().as_str()));
        assert_eq!(printed, lines);
    }

    #[test]
    fn an_error_exits_2_whatever_else_happened() {
        let mut report = Report::default();
        let refused = Error::Refused(template_cleanup_core::preflight::Refusal {
            check: template_cleanup_core::preflight::Check::GuardExists,
            message: "no guard.".into(),
        });
        report.stop(&refused);
        assert_eq!(
            report.error.as_deref(),
            Some("pre-flight check `guard exists` failed: no guard. Nothing was deleted.")
        );
        assert_eq!(report.exit_code(), CANNOT_RUN);
    }
}
