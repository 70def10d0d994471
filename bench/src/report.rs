//! The runner's output: per case, each metric's median per tool and perfpeer/other ratios, as an
//! aligned text table and as JSON (medians, ratios and every sample).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::cases::{Case, Tool};
use crate::parse::Figures;
use crate::stats::{median, ratio};

/// Every run's figures, by case and tool.
#[derive(Debug, Default)]
pub struct Samples {
    by: BTreeMap<(&'static str, Tool), Vec<Figures>>,
}

impl Samples {
    /// Adds one run.
    pub fn add(&mut self, case: Case, tool: Tool, f: Figures) {
        self.by.entry((case.name(), tool)).or_default().push(f);
    }

    /// The runs of `tool` on `case`.
    pub fn get(&self, case: Case, tool: Tool) -> &[Figures] {
        self.by
            .get(&(case.name(), tool))
            .map_or(&[], |v| v.as_slice())
    }

    fn values(&self, case: Case, tool: Tool, key: &str) -> Vec<f64> {
        self.get(case, tool)
            .iter()
            .filter_map(|f| f.get(key).copied())
            .collect()
    }

    fn median(&self, case: Case, tool: Tool, key: &str) -> Option<f64> {
        median(&self.values(case, tool, key))
    }
}

fn show(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// The text table.
pub fn table(cases: &[Case], s: &Samples, runs: u32, secs: u32, notes: &[String]) -> String {
    let mut out = format!("perfpeer-bench: loopback, {runs} run(s) of {secs} s, medians\n\n");
    let w = 34;
    for &case in cases {
        let tools = case.tools();
        out += &format!("{} [{}]\n", case.title(), case.name());
        out += &format!("  {:w$}", "");
        for t in tools {
            out += &format!("{:>12}", t.name());
        }
        for t in &tools[1..] {
            out += &format!("{:>15}", format!("pp/{}", t.name()));
        }
        out += "\n";
        for m in case.metrics() {
            out += &format!("  {:w$}", m.label);
            let meds: Vec<Option<f64>> = tools.iter().map(|&t| s.median(case, t, m.key)).collect();
            for v in &meds {
                out += &format!("{:>12}", show(*v));
            }
            for v in &meds[1..] {
                out += &format!(
                    "{:>15}",
                    ratio(meds[0], *v).map_or("-".into(), |r| format!("{r:.2}"))
                );
            }
            out += "\n";
        }
        out += "\n";
    }
    for n in notes {
        out += &format!("note: {n}\n");
    }
    out
}

/// The JSON: `{runs, seconds, notes, cases: {name: {title, metrics: {key: {label, median:
/// {tool: v}, ratio: {tool: perfpeer/tool}, samples: {tool: [..]}}}}}}`.
pub fn json(cases: &[Case], s: &Samples, runs: u32, secs: u32, notes: &[String]) -> Value {
    let mut out = serde_json::Map::new();
    for &case in cases {
        let mut metrics = serde_json::Map::new();
        for m in case.metrics() {
            let (mut med, mut rat, mut all) = (
                serde_json::Map::new(),
                serde_json::Map::new(),
                serde_json::Map::new(),
            );
            let ours = s.median(case, Tool::Perfpeer, m.key);
            for &t in case.tools() {
                let v = s.median(case, t, m.key);
                med.insert(t.name().into(), json!(v));
                all.insert(t.name().into(), json!(s.values(case, t, m.key)));
                if t != Tool::Perfpeer {
                    rat.insert(t.name().into(), json!(ratio(ours, v)));
                }
            }
            metrics.insert(
                m.key.into(),
                json!({"label": m.label, "median": med, "ratio": rat, "samples": all}),
            );
        }
        out.insert(
            case.name().into(),
            json!({"title": case.title(), "metrics": metrics}),
        );
    }
    json!({"runs": runs, "seconds": secs, "notes": notes, "cases": out})
}

/// This run against an earlier one's JSON (`--compare`): per case and metric in both, each
/// tool's median then and now and the change in percent, so a regression shows in one command.
pub fn compare(now: &Value, then: &Value) -> String {
    let mut out = String::from("change against the earlier run (median then → now)\n");
    let Some(cases) = now["cases"].as_object() else {
        return out;
    };
    for (case, c) in cases {
        let Some(metrics) = c["metrics"].as_object() else {
            continue;
        };
        for (key, m) in metrics {
            let old = &then["cases"][case]["metrics"][key]["median"];
            let Some(tools) = m["median"].as_object() else {
                continue;
            };
            for (tool, v) in tools {
                let (Some(v), Some(was)) = (v.as_f64(), old[tool].as_f64()) else {
                    continue;
                };
                let change = if was == 0.0 {
                    "-".to_string()
                } else {
                    format!("{:+.1}%", (v - was) / was.abs() * 100.0)
                };
                out += &format!(
                    "  {case:14} {:32} {tool:9} {:>10} → {:>10}  {change}\n",
                    m["label"].as_str().unwrap_or(key),
                    show(Some(was)),
                    show(Some(v))
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_shows_each_median_then_and_now() {
        let then = json!({"cases": {"tcp1": {"metrics": {"gbps": {"label": "goodput", "median": {"perfpeer": 20.0, "iperf3": 10.0}}}}}});
        let now = json!({"cases": {"tcp1": {"metrics": {"gbps": {"label": "goodput", "median": {"perfpeer": 15.0, "iperf3": 10.0, "iperf2": 9.0}}}},
                                   "rr": {"metrics": {"tps": {"label": "t", "median": {"perfpeer": 1.0}}}}}});
        let text = compare(&now, &then);
        assert!(
            text.contains("perfpeer") && text.contains("-25.0%"),
            "{text}"
        );
        assert!(text.contains("+0.0%"), "{text}");
        assert!(
            !text.contains("iperf2"),
            "no earlier figure, no line: {text}"
        );
        assert!(!text.contains("rr "), "{text}");
    }

    #[test]
    fn medians_and_ratios_reach_table_and_json() {
        let mut s = Samples::default();
        for (pp, i3) in [(10.0, 5.0), (30.0, 6.0), (20.0, 4.0)] {
            s.add(Case::Tcp1, Tool::Perfpeer, Figures::from([("gbps", pp)]));
            s.add(Case::Tcp1, Tool::Iperf3, Figures::from([("gbps", i3)]));
        }
        let j = json(&[Case::Tcp1], &s, 3, 5, &[]);
        let g = &j["cases"]["tcp1"]["metrics"]["gbps"];
        assert_eq!(g["median"]["perfpeer"], 20.0);
        assert_eq!(g["ratio"]["iperf3"], 4.0);
        assert_eq!(g["ratio"]["iperf2"], Value::Null, "no iperf2 samples");
        assert_eq!(g["samples"]["iperf3"], json!([5.0, 6.0, 4.0]));
        let t = table(&[Case::Tcp1], &s, 3, 5, &["a note".into()]);
        assert!(
            t.contains("20.0") && t.contains("4.00") && t.contains("note: a note"),
            "{t}"
        );
    }
}
