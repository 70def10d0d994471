//! The model's side of the Plans screen: the plans the peer offers (`perfpeer serve --plans`),
//! one tapped to run on the peer, and that run followed live (the case starting, each
//! finished case's row, the whole run with its verdict and kept id); after a reconnect (or a
//! tap on it among the peer's running tests) the page attaches to it and the replay rebuilds
//! the rows.

use perfpeer_shared::control::ClientMsg;
use perfpeer_shared::history::Notes;
use perfpeer_shared::plan_progress::{CaseRow, ListedPlan, PlanEnd, PlanProgress, PlanStatus};

use super::{Cmd, Model, Screen};

/// The Plans screen's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plans {
    /// The peer's plans, once it answered.
    pub list: Option<Vec<ListedPlan>>,
    /// The plan run started (or followed) from this page.
    pub run: Option<PlanRun>,
}

/// A plan run on the peer, as far as the page has seen it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanRun {
    /// Its id (from `plan_started`; none until then).
    pub plan_id: Option<String>,
    /// The plan's listed name.
    pub name: String,
    /// Its cases.
    pub cases: u32,
    /// What runs now, in words.
    pub progress: String,
    /// Each finished case's row, in order.
    pub rows: Vec<CaseRow>,
    /// How the run ended (with where the peer keeps it), at its end.
    pub end: Option<PlanEnd>,
    /// Stop was asked for.
    pub stopping: bool,
}

impl PlanRun {
    /// Whether it is still running (or starting).
    pub fn running(&self) -> bool {
        self.end.is_none()
    }
}

/// `s` seconds in words: `45 s`, `3 min 5 s`.
pub fn duration_words(s: u64) -> String {
    if s < 60 {
        format!("{s} s")
    } else if s.is_multiple_of(60) {
        format!("{} min", s / 60)
    } else {
        format!("{} min {} s", s / 60, s % 60)
    }
}

impl Model {
    /// The Plans screen opened: ask for the list, unless a run is being followed (the
    /// connection answers nothing else then).
    pub(super) fn plans_shown(&mut self) -> Vec<Cmd> {
        if self.plans.run.as_ref().is_some_and(|r| !r.running()) {
            self.plans.run = None;
        }
        if self.plans.run.is_none() && self.run.is_none() && self.can_send() {
            return vec![Cmd::Send(ClientMsg::Plans)];
        }
        Vec::new()
    }

    /// A plan was tapped: run it on the peer with `tags` (as typed: checked here first).
    pub(super) fn run_plan(&mut self, name: String, tags: &str) -> Vec<Cmd> {
        if !self.can_send() || self.run.is_some() || self.plans.run.is_some() {
            return Vec::new();
        }
        let tags = match Notes::from_input("", tags) {
            Ok(notes) => notes.tags,
            Err(e) => {
                self.notice = Some(crate::present::Notice {
                    title: "The plan did not start".into(),
                    detail: format!("Tags: {e}."),
                    hint: "Tags are words without spaces, like fw=1.2.3.".into(),
                });
                return Vec::new();
            }
        };
        self.notice = None;
        self.screen = Screen::Plans;
        self.plans.run = Some(PlanRun {
            name: name.clone(),
            progress: "Starting…".into(),
            ..PlanRun::default()
        });
        vec![Cmd::Send(ClientMsg::Plan { name, tags })]
    }

    /// Stop after the running case.
    pub(super) fn stop_plan(&mut self) -> Vec<Cmd> {
        match &mut self.plans.run {
            Some(run) if run.running() && self.link == super::Link::Open => {
                run.stopping = true;
                vec![Cmd::Send(ClientMsg::Cancel)]
            }
            _ => Vec::new(),
        }
    }

    pub(super) fn on_plan_list(&mut self, plans: Vec<ListedPlan>) {
        self.plans.list = Some(plans);
    }

    pub(super) fn on_plan_started(&mut self, plan_id: String, name: String, cases: u32) {
        // A plan tapped among the peer's running tests: its screen is Plans.
        if self.attaching.as_deref() == Some(plan_id.as_str()) {
            self.attaching = None;
            self.screen = Screen::Plans;
        }
        let run = self.plans.run.get_or_insert_with(PlanRun::default);
        // A replay after a reconnect starts from the beginning again.
        run.rows.clear();
        run.plan_id = Some(plan_id);
        run.name = name;
        run.cases = cases;
    }

    pub(super) fn on_plan_event(&mut self, plan_id: &str, event: PlanProgress) {
        let Some(run) = self.plan_run(plan_id) else {
            return;
        };
        match event {
            PlanProgress::Starting {
                index,
                of,
                label,
                repeat,
                repeats,
                eta_s,
            } => {
                run.progress = format!(
                    "Case {} of {of}: {label}{}, about {} left",
                    index + 1,
                    if repeats > 1 {
                        format!(" (repeat {repeat} of {repeats})")
                    } else {
                        String::new()
                    },
                    duration_words(eta_s)
                );
            }
            PlanProgress::CaseDone { index, row } => {
                // A replay after a reconnect sends the rows again: each index once.
                if index as usize == run.rows.len() {
                    run.rows.push(row);
                }
            }
        }
    }

    pub(super) fn on_plan_ended(&mut self, plan_id: &str, end: PlanEnd) {
        let Some(run) = self.plan_run(plan_id) else {
            return;
        };
        run.progress = if end.status == PlanStatus::Stopped {
            format!(
                "Stopped after {} of {} cases.",
                end.cases, end.planned_cases
            )
        } else {
            format!("Done: {} cases.", end.cases)
        };
        run.end = Some(end);
    }

    /// Whether `id` is the plan run this page follows now.
    pub(super) fn follows_plan(&self, id: &str) -> bool {
        self.plans
            .run
            .as_ref()
            .is_some_and(|r| r.running() && r.plan_id.as_deref() == Some(id))
    }

    /// A refusal of `plan` before it started: no run to show.
    pub(super) fn plan_refused(&mut self) {
        if self.plans.run.as_ref().is_some_and(|r| r.plan_id.is_none()) {
            self.plans.run = None;
        }
    }

    /// The plan run followed is no longer on the peer (it ended more than 2 minutes before the
    /// page came back, or the peer restarted): its result, if kept, is in History.
    pub(super) fn plan_gone(&mut self) {
        if self.plans.run.as_ref().is_some_and(PlanRun::running) {
            self.plans.run = None;
            self.plans.list = None;
        }
    }

    /// After a reconnect: follow the plan run again (its replay rebuilds the rows).
    pub(super) fn plan_reattach(&self) -> Option<Cmd> {
        let run = self.plans.run.as_ref().filter(|r| r.running())?;
        Some(Cmd::Send(ClientMsg::Attach {
            test_id: run.plan_id.clone()?,
        }))
    }

    fn plan_run(&mut self, plan_id: &str) -> Option<&mut PlanRun> {
        self.plans
            .run
            .as_mut()
            .filter(|r| r.plan_id.as_deref() == Some(plan_id))
    }
}
