//! Prometheus's text exposition format (version 0.0.4), written by hand: a family's `# HELP`
//! and `# TYPE` lines, then its samples, one a line (`name{label="value"} 42`). Label values
//! and help texts are escaped as the format says (a backslash, a double quote in a label value,
//! a line feed). Pure text, no I/O: the control port's `/metrics` route serves what this writes.
//! No client crate: a DUT build carries this in a few hundred bytes.

use std::fmt::Write;

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What a family's samples mean to Prometheus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Only ever goes up (its name ends in `_total`).
    Counter,
    /// Goes up and down.
    Gauge,
}

impl MetricType {
    fn word(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
        }
    }
}

/// A scrape's text being written: families in the order they are begun.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// An empty page, with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Exposition {
        Exposition {
            text: String::with_capacity(capacity),
        }
    }

    /// Begins the family `name`: its help line and its type line. Its samples follow.
    pub fn family(&mut self, name: &str, kind: MetricType, help: &str) {
        self.text.push_str("# HELP ");
        self.text.push_str(name);
        self.text.push(' ');
        for c in help.chars() {
            match c {
                '\\' => self.text.push_str("\\\\"),
                '\n' => self.text.push_str("\\n"),
                c => self.text.push(c),
            }
        }
        self.text.push_str("\n# TYPE ");
        self.text.push_str(name);
        self.text.push(' ');
        self.text.push_str(kind.word());
        self.text.push('\n');
    }

    /// A sample of `name` with `labels` (name, value) and a whole-number value.
    pub fn count(&mut self, name: &str, labels: &[(&str, &str)], value: u64) {
        self.labelled(name, labels);
        let _ = writeln!(self.text, "{value}");
    }

    /// A sample of `name` with `labels` and a real value (`NaN`, `+Inf` and `-Inf` as the
    /// format spells them).
    pub fn real(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.labelled(name, labels);
        if value.is_nan() {
            self.text.push_str("NaN\n");
        } else if value.is_infinite() {
            self.text
                .push_str(if value > 0.0 { "+Inf\n" } else { "-Inf\n" });
        } else {
            let _ = writeln!(self.text, "{value}");
        }
    }

    /// The sample's name and labels, and the space before its value.
    fn labelled(&mut self, name: &str, labels: &[(&str, &str)]) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                self.text.push_str(label);
                self.text.push_str("=\"");
                for c in value.chars() {
                    match c {
                        '\\' => self.text.push_str("\\\\"),
                        '"' => self.text.push_str("\\\""),
                        '\n' => self.text.push_str("\\n"),
                        c => self.text.push(c),
                    }
                }
                self.text.push('"');
            }
            self.text.push('}');
        }
        self.text.push(' ');
    }

    /// The page's text.
    pub fn into_text(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_samples_are_written_byte_for_byte() {
        let mut page = Exposition::default();
        page.family(
            "perfpeer_tests_started_total",
            MetricType::Counter,
            "Tests started.",
        );
        page.count("perfpeer_tests_started_total", &[("kind", "served")], 3);
        page.count("perfpeer_tests_started_total", &[("kind", "run")], 0);
        page.family("process_open_fds", MetricType::Gauge, "Open files.");
        page.count("process_open_fds", &[], 12);
        page.family("perfpeer_rate", MetricType::Gauge, "A real value.");
        page.real("perfpeer_rate", &[("a", "1"), ("b", "2")], 1.5e9);
        page.real("perfpeer_rate", &[], 0.25);
        assert_eq!(
            page.into_text(),
            "# HELP perfpeer_tests_started_total Tests started.\n\
             # TYPE perfpeer_tests_started_total counter\n\
             perfpeer_tests_started_total{kind=\"served\"} 3\n\
             perfpeer_tests_started_total{kind=\"run\"} 0\n\
             # HELP process_open_fds Open files.\n\
             # TYPE process_open_fds gauge\n\
             process_open_fds 12\n\
             # HELP perfpeer_rate A real value.\n\
             # TYPE perfpeer_rate gauge\n\
             perfpeer_rate{a=\"1\",b=\"2\"} 1500000000\n\
             perfpeer_rate 0.25\n"
        );
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut page = Exposition::default();
        page.family("m", MetricType::Gauge, "back\\slash \"quoted\"\nnext");
        page.count("m", &[("far_peer", "a\\b\"c\nd")], 1);
        assert_eq!(
            page.into_text(),
            "# HELP m back\\\\slash \"quoted\"\\nnext\n\
             # TYPE m gauge\n\
             m{far_peer=\"a\\\\b\\\"c\\nd\"} 1\n"
        );
    }

    #[test]
    fn special_reals_are_spelled_as_the_format_says() {
        let mut page = Exposition::default();
        page.real("m", &[], f64::NAN);
        page.real("m", &[], f64::INFINITY);
        page.real("m", &[], f64::NEG_INFINITY);
        page.real("m", &[], -0.001);
        page.count("m", &[], u64::MAX);
        assert_eq!(
            page.into_text(),
            "m NaN\nm +Inf\nm -Inf\nm -0.001\nm 18446744073709551615\n"
        );
    }
}
