//! A plan file (TOML, docs/plans.md) read into its cases: the matrix expanded, every case's
//! spec built and validated, expectations parsed, the limits checked, before anything runs.
//! Every refusal names the line it comes from.

use std::time::Duration;

use perfpeer_shared::plan::{MAX_PLAN_RUNS, MAX_REPEATS, PlanCase, applicable};
use perfpeer_shared::spec::{Direction, EndCondition, Protocol, TestSpec, ValidSpec};
use perfpeer_shared::verdict::Expectation;
use serde::Deserialize;
use toml::Spanned;

/// Most far peers a plan names.
const MAX_PEERS: usize = 32;
/// Longest run of one case, seconds.
const MAX_CASE_SECONDS: f64 = 3600.0;
/// Largest plan file read.
pub(crate) const MAX_PLAN_BYTES: u64 = 256 * 1024;

/// A plan as the file says it, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// Its name (the file's stem unless `name` is given).
    pub(crate) name: String,
    /// The cases in the order they run.
    pub(crate) cases: Vec<PlanCase>,
    /// Worse than a baseline by more than this % fails a case.
    pub(crate) max_drop_percent: Option<f64>,
    /// The run each run of the plan is compared with, unless `--baseline` names another.
    pub(crate) baseline: Option<Baseline>,
}

/// A plan's baseline as its file names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Baseline {
    /// The newest complete run of the same plan kept where the run is kept.
    Last,
    /// A kept plan run, by its whole id.
    Id(String),
}

/// A plan file that cannot run: where and why.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {reason}")]
pub(crate) struct PlanError {
    file: String,
    line: usize,
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTop {
    name: Option<String>,
    peers: Option<Spanned<Vec<String>>>,
    time: Option<Spanned<Number>>,
    repeats: Option<Spanned<i64>>,
    expect: Option<Spanned<Vec<String>>>,
    max_drop: Option<Spanned<Number>>,
    baseline: Option<Spanned<String>>,
    matrix: Option<Spanned<Matrix>>,
    #[serde(default, rename = "case")]
    cases: Vec<Spanned<FileCase>>,
}

/// Settings a case takes from the top of the file unless it gives its own. (The file's
/// structs list them field by field: serde's `flatten` would lose the spans that name a line.)
#[derive(Debug, Default)]
struct Settings {
    time: Option<Spanned<Number>>,
    repeats: Option<Spanned<i64>>,
    expect: Option<Spanned<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Matrix {
    protocol: Option<Vec<String>>,
    direction: Option<Vec<String>>,
    streams: Option<Vec<i64>>,
    len: Option<Vec<Number>>,
    tos: Option<Vec<Number>>,
    bitrate: Option<Vec<Number>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCase {
    name: String,
    peer: Option<String>,
    protocol: Option<String>,
    direction: Option<String>,
    streams: Option<i64>,
    len: Option<Number>,
    tos: Option<Number>,
    bitrate: Option<Number>,
    time: Option<Spanned<Number>>,
    repeats: Option<Spanned<i64>>,
    expect: Option<Spanned<Vec<String>>>,
}

/// A value written as a number or as text (`2`, `"2s"`, `"128K"`, `"vo"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Number {
    Int(i64),
    Float(f64),
    Text(String),
}

impl Number {
    fn text(&self) -> String {
        match self {
            Number::Int(i) => i.to_string(),
            Number::Float(f) => f.to_string(),
            Number::Text(t) => t.trim().to_string(),
        }
    }
}

/// One cell of the matrix (or an explicit case) before it becomes a spec.
#[derive(Debug, Clone, Default)]
struct Cell {
    protocol: Option<String>,
    direction: Option<String>,
    streams: Option<i64>,
    len: Option<Number>,
    tos: Option<Number>,
    bitrate: Option<Number>,
}

/// Reads the plan in `text` (from `file`, named in errors).
pub(crate) fn parse(file: &str, text: &str) -> Result<Plan, PlanError> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let fail = |offset: usize, reason: String| PlanError {
        file: file.to_string(),
        line: line_of(offset),
        reason,
    };
    let mut top: FileTop = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        fail(offset, e.message().to_string())
    })?;
    let top_settings = Settings {
        time: top.time.take(),
        repeats: top.repeats.take(),
        expect: top.expect.take(),
    };
    let case_settings: Vec<Settings> = top
        .cases
        .iter_mut()
        .map(|c| {
            let c = c.get_mut();
            Settings {
                time: c.time.take(),
                repeats: c.repeats.take(),
                expect: c.expect.take(),
            }
        })
        .collect();
    let name = top.name.clone().unwrap_or_else(|| {
        std::path::Path::new(file)
            .file_stem()
            .map_or_else(|| "plan".into(), |s| s.to_string_lossy().into_owned())
    });
    let peers = match &top.peers {
        Some(p) if p.get_ref().is_empty() => {
            return Err(fail(
                p.span().start,
                "peers is empty: name at least one".into(),
            ));
        }
        Some(p) if p.get_ref().len() > MAX_PEERS => {
            return Err(fail(p.span().start, format!("at most {MAX_PEERS} peers")));
        }
        Some(p) => p.get_ref().clone(),
        None => Vec::new(),
    };
    let max_drop_percent = top
        .max_drop
        .as_ref()
        .map(|d| {
            let text = d.get_ref().text();
            text.strip_suffix('%')
                .unwrap_or(&text)
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0 && *v < 100.0)
                .ok_or_else(|| {
                    fail(
                        d.span().start,
                        format!("max_drop {text}: a share such as \"10%\""),
                    )
                })
        })
        .transpose()?;
    // "last" or a result id: never a path (a browser may start a peer's plans).
    let baseline = top
        .baseline
        .as_ref()
        .map(|b| match b.get_ref().as_str() {
            "last" => Ok(Baseline::Last),
            id if id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()) => {
                Ok(Baseline::Id(id.to_ascii_lowercase()))
            }
            other => Err(fail(
                b.span().start,
                format!("baseline {other:?}: \"last\" or a kept plan run's whole id"),
            )),
        })
        .transpose()?;
    // A matrix cell has no settings of its own: it takes the top's.
    let no_settings = Settings::default();
    let mut cells: Vec<(String, Option<String>, Cell, &Settings, usize)> = Vec::new();
    if let Some(matrix) = &top.matrix {
        let at = matrix.span().start;
        for cell in expand(matrix.get_ref()) {
            cells.push((label_of(&cell), None, cell, &no_settings, at));
        }
    }
    for (case, own) in top.cases.iter().zip(&case_settings) {
        let c = case.get_ref();
        let cell = Cell {
            protocol: c.protocol.clone(),
            direction: c.direction.clone(),
            streams: c.streams,
            len: c.len.clone(),
            tos: c.tos.clone(),
            bitrate: c.bitrate.clone(),
        };
        cells.push((
            c.name.trim().to_string(),
            c.peer.clone(),
            cell,
            own,
            case.span().start,
        ));
    }
    if cells.is_empty() {
        return Err(fail(
            0,
            "no cases: give a [matrix] or [[case]] tables".into(),
        ));
    }
    let mut cases = Vec::new();
    let mut runs = 0usize;
    for (label, peer, cell, own, at) in cells {
        if label.is_empty() {
            return Err(fail(at, "a case needs a name".into()));
        }
        let case_peers = match peer {
            Some(p) => vec![p],
            None if peers.is_empty() => {
                return Err(fail(
                    at,
                    format!(
                        "case '{label}' has no peer: give peers = [\"host\"] at the top or peer = \"host\" in the case"
                    ),
                ));
            }
            None => peers.clone(),
        };
        let repeats = pick(&own.repeats, &top_settings.repeats)
            .map(|r| {
                u32::try_from(*r.get_ref())
                    .ok()
                    .filter(|n| (1..=MAX_REPEATS).contains(n))
                    .ok_or_else(|| {
                        fail(
                            r.span().start,
                            format!("repeats must be 1 to {MAX_REPEATS}, got {}", r.get_ref()),
                        )
                    })
            })
            .transpose()?
            .unwrap_or(1);
        let seconds = match pick(&own.time, &top_settings.time) {
            Some(t) => seconds_of(t.get_ref())
                .ok_or_else(|| fail(t.span().start, format!(
                    "time {}: a positive number of seconds up to {MAX_CASE_SECONDS} (2, \"2s\", \"500ms\")",
                    t.get_ref().text()
                )))?,
            None => 10.0,
        };
        let mut spec = spec_of(&cell, seconds)
            .map_err(|reason| fail(at, format!("case '{label}': {reason}")))?;
        // A case's own expectations replace the top's, and must all apply to it; the top's
        // apply where the case measures them (a plan's `loss<=1%` means its UDP cases).
        let expect = match (&own.expect, &top_settings.expect) {
            (Some(list), _) => parse_expect(list).map_err(|r| fail(list.span().start, r))?,
            (_, Some(list)) => applicable(
                &parse_expect(list).map_err(|r| fail(list.span().start, r))?,
                &spec,
            ),
            _ => Vec::new(),
        };
        spec.expect = expect;
        let spec = ValidSpec::new(spec)
            .map_err(|e| fail(at, format!("case '{label}': {e}")))?
            .into_inner();
        for peer in &case_peers {
            runs += repeats as usize;
            if runs > MAX_PLAN_RUNS {
                return Err(fail(
                    at,
                    format!(
                        "the plan asks for more than {MAX_PLAN_RUNS} test runs (cases × peers × repeats): split it"
                    ),
                ));
            }
            let label = if case_peers.len() > 1 || peers.len() > 1 {
                format!("{label} → {peer}")
            } else {
                label.clone()
            };
            if cases.iter().any(|c: &PlanCase| c.label == label) {
                return Err(fail(at, format!("two cases are named '{label}'")));
            }
            cases.push(PlanCase {
                label,
                peer: peer.clone(),
                spec: spec.clone(),
                repeats,
            });
        }
    }
    Ok(Plan {
        name,
        cases,
        max_drop_percent,
        baseline,
    })
}

fn pick<'a, T>(own: &'a Option<T>, top: &'a Option<T>) -> Option<&'a T> {
    own.as_ref().or(top.as_ref())
}

fn parse_expect(list: &Spanned<Vec<String>>) -> Result<Vec<Expectation>, String> {
    let mut all = Vec::new();
    for text in list.get_ref() {
        all.extend(Expectation::parse_list(text).map_err(|e| format!("expect: {e}"))?);
    }
    Ok(all)
}

/// Every combination of the matrix's lists (an absent list is one default cell).
fn expand(m: &Matrix) -> Vec<Cell> {
    fn axis<T: Clone>(list: &Option<Vec<T>>) -> Vec<Option<T>> {
        match list {
            Some(v) if !v.is_empty() => v.iter().cloned().map(Some).collect(),
            _ => vec![None],
        }
    }
    let mut cells = Vec::new();
    for protocol in axis(&m.protocol) {
        for direction in axis(&m.direction) {
            for streams in axis(&m.streams) {
                for len in axis(&m.len) {
                    for tos in axis(&m.tos) {
                        for bitrate in axis(&m.bitrate) {
                            cells.push(Cell {
                                protocol: protocol.clone(),
                                direction: direction.clone(),
                                streams,
                                len: len.clone(),
                                tos: tos.clone(),
                                bitrate: bitrate.clone(),
                            });
                            // Ten thousand cells are refused by the run count anyway; stop
                            // expanding long before memory notices.
                            if cells.len() > MAX_PLAN_RUNS {
                                return cells;
                            }
                        }
                    }
                }
            }
        }
    }
    cells
}

/// "tcp up 4 streams len 1400 tos vo 100M": the matrix cell in words.
fn label_of(cell: &Cell) -> String {
    let mut words = vec![
        cell.protocol
            .clone()
            .unwrap_or_else(|| "tcp".into())
            .to_lowercase(),
        cell.direction
            .clone()
            .unwrap_or_else(|| "up".into())
            .to_lowercase(),
    ];
    if let Some(n) = cell.streams {
        words.push(format!("{n} stream{}", if n == 1 { "" } else { "s" }));
    }
    if let Some(len) = &cell.len {
        words.push(format!("len {}", len.text()));
    }
    if let Some(tos) = &cell.tos {
        words.push(format!("tos {}", tos.text()));
    }
    if let Some(rate) = &cell.bitrate {
        words.push(rate.text());
    }
    words.join(" ")
}

fn seconds_of(n: &Number) -> Option<f64> {
    let s = match n {
        Number::Int(i) => *i as f64,
        Number::Float(f) => *f,
        Number::Text(t) => {
            let t = t.trim();
            if let Some(ms) = t.strip_suffix("ms") {
                ms.trim().parse::<f64>().ok()? / 1000.0
            } else {
                t.strip_suffix('s').unwrap_or(t).trim().parse().ok()?
            }
        }
    };
    (s.is_finite() && s > 0.0 && s <= MAX_CASE_SECONDS).then_some(s)
}

/// An access class name (Wi-Fi WMM: the TOS whose precedence mac80211 maps to it) or a TOS
/// byte as `-S` takes it.
fn tos_of(n: &Number) -> Option<u8> {
    match n.text().to_ascii_lowercase().as_str() {
        "be" => Some(0x00),
        "bk" => Some(0x20),
        "vi" => Some(0x80),
        "vo" => Some(0xc0),
        other => perfpeer_shared::units::parse_tos(other),
    }
}

/// The cell's spec for `seconds`, not yet validated.
fn spec_of(cell: &Cell, seconds: f64) -> Result<TestSpec, String> {
    let protocol = match cell
        .protocol
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("tcp") => Protocol::Tcp,
        Some("udp") => Protocol::Udp,
        Some("dccp") => Protocol::Dccp,
        Some(other) => return Err(format!("protocol '{other}': tcp, udp or dccp")),
    };
    let mut spec = TestSpec::new(protocol);
    spec.direction = match cell
        .direction
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("up" | "normal") => Direction::Normal,
        Some("down" | "reverse") => Direction::Reverse,
        Some("both" | "bidir") => Direction::Bidir,
        Some(other) => return Err(format!("direction '{other}': up, down or both")),
    };
    if let Some(n) = cell.streams {
        spec.streams = u16::try_from(n).map_err(|_| format!("streams {n}: 1 to 128"))?;
    }
    if let Some(len) = &cell.len {
        let bytes =
            perfpeer_shared::units::parse_size(&len.text()).map_err(|e| format!("len: {e}"))?;
        spec.len = u32::try_from(bytes).map_err(|_| format!("len {}: too large", len.text()))?;
    }
    if let Some(tos) = &cell.tos {
        spec.tos =
            Some(tos_of(tos).ok_or_else(|| {
                format!("tos '{}': be, bk, vi, vo or a TOS byte (0xb8)", tos.text())
            })?);
    }
    if let Some(rate) = &cell.bitrate {
        let r = perfpeer_shared::units::parse_rate(&rate.text())
            .map_err(|e| format!("bitrate: {e}"))?;
        spec.bitrate = (r.0 > 0).then_some(r);
    }
    spec.end = EndCondition::Time {
        duration: Duration::from_secs_f64(seconds),
    };
    Ok(spec)
}

#[cfg(test)]
mod tests;
