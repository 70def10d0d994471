//! The plans a serving peer offers (`perfpeer serve --plans DIR`): DIR's `*.toml` files, listed
//! by their stems and read when asked. Bounded: at most [`MAX_LISTED`] files, each at most
//! [`MAX_PLAN_BYTES`]; a symlink leading out of DIR is not read; a client names a plan by its
//! listed name only, never by a path.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use perfpeer_shared::plan_progress::ListedPlan;

use super::file::{self, MAX_PLAN_BYTES, Plan};

/// Most plan files listed (the first by name).
pub(crate) const MAX_LISTED: usize = 64;
/// Most directory entries looked at, whatever else DIR holds.
const MAX_SCANNED: usize = 4096;

/// A directory of plan files.
#[derive(Debug)]
pub(crate) struct Shelf {
    /// The directory, canonical.
    dir: PathBuf,
}

impl Shelf {
    /// The plans in `dir` (which must be a directory).
    pub(crate) fn open(dir: &Path) -> std::io::Result<Shelf> {
        let dir = dir.canonicalize()?;
        if !dir.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
        Ok(Shelf { dir })
    }

    /// Every plan file, read now: runnable ones with their cases and time, bad ones with
    /// their error.
    pub(crate) fn list(&self) -> Vec<ListedPlan> {
        self.files()
            .into_iter()
            .map(|(name, path)| match self.read(&name, &path) {
                Ok(plan) => ListedPlan {
                    title: plan.name.clone(),
                    cases: u32::try_from(plan.cases.len()).unwrap_or(u32::MAX),
                    eta_s: super::plan_time(&plan.cases).as_secs(),
                    error: None,
                    name,
                },
                Err(error) => ListedPlan {
                    name,
                    title: String::new(),
                    cases: 0,
                    eta_s: 0,
                    error: Some(error),
                },
            })
            .collect()
    }

    /// The listed plan called `name`, read and checked now (why not, if it cannot run); none
    /// when no plan is listed by that name.
    pub(crate) fn load(&self, name: &str) -> Option<Result<Plan, String>> {
        let (name, path) = self.files().into_iter().find(|(n, _)| n == name)?;
        Some(self.read(&name, &path))
    }

    /// The plan files by name, sorted, at most [`MAX_LISTED`].
    fn files(&self) -> Vec<(String, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut files: Vec<(String, PathBuf)> = entries
            .take(MAX_SCANNED)
            .filter_map(Result::ok)
            .filter_map(|e| {
                let path = e.path();
                let stem = path
                    .extension()
                    .is_some_and(|x| x == "toml")
                    .then(|| path.file_stem()?.to_str().map(str::to_string))??;
                listable(&stem).then_some((stem, path))
            })
            .collect();
        files.sort();
        if files.len() > MAX_LISTED {
            tracing::warn!(
                "{} holds {} plans: listing the first {MAX_LISTED}",
                self.dir.display(),
                files.len()
            );
            files.truncate(MAX_LISTED);
        }
        files
    }

    /// Reads and parses one file: a symlink only when it stays in the directory, a file only
    /// up to [`MAX_PLAN_BYTES`].
    fn read(&self, name: &str, path: &Path) -> Result<Plan, String> {
        let real = path
            .canonicalize()
            .map_err(|e| format!("cannot read it: {e}"))?;
        if real.parent() != Some(self.dir.as_path()) {
            return Err("a link out of the plans directory: not read".into());
        }
        let file = std::fs::File::open(&real).map_err(|e| format!("cannot read it: {e}"))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err("not a file".into());
        }
        let mut text = String::new();
        file.take(MAX_PLAN_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read it: {e}"))?;
        if text.len() as u64 > MAX_PLAN_BYTES {
            return Err(format!("over {MAX_PLAN_BYTES} bytes"));
        }
        file::parse(&format!("{name}.toml"), &text).map_err(|e| e.to_string())
    }
}

/// A stem a client can name safely: letters, digits, `.`, `_`, `-`, not starting with a dot.
fn listable(stem: &str) -> bool {
    !stem.is_empty()
        && stem.len() <= 64
        && !stem.starts_with('.')
        && stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "peers = [\"127.0.0.1:5210\"]\ntime = 1\n\n[[case]]\nname = \"up\"\nprotocol = \"tcp\"\n\n[[case]]\nname = \"down\"\nprotocol = \"tcp\"\ndirection = \"down\"\n";

    /// A fresh directory, removed at the end.
    struct TempDir(PathBuf);

    impl TempDir {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir() -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("perfpeer-shelf-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    #[test]
    fn lists_good_and_bad_plans_and_loads_by_name_only() {
        let d = dir();
        std::fs::write(d.path().join("nightly.toml"), GOOD).unwrap();
        std::fs::write(d.path().join("broken.toml"), "peers = [\n").unwrap();
        std::fs::write(d.path().join("notes.txt"), GOOD).unwrap();
        std::fs::write(d.path().join(".hidden.toml"), GOOD).unwrap();
        std::fs::write(
            d.path().join("huge.toml"),
            "#".repeat(usize::try_from(MAX_PLAN_BYTES).unwrap() + 1),
        )
        .unwrap();
        let shelf = Shelf::open(d.path()).unwrap();
        let list = shelf.list();
        let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["broken", "huge", "nightly"]);
        assert!(list[0].error.as_deref().unwrap().contains("broken.toml:"));
        assert!(list[1].error.as_deref().unwrap().contains("bytes"));
        assert_eq!(list[2].cases, 2);
        assert_eq!(list[2].eta_s, 4);
        assert!(list[2].error.is_none());
        assert_eq!(shelf.load("nightly").unwrap().unwrap().cases.len(), 2);
        assert!(shelf.load("broken").unwrap().is_err());
        for bad in ["../nightly", "nightly.toml", "notes", ".hidden", ""] {
            assert!(shelf.load(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_symlink_out_of_the_directory_is_not_read() {
        let outside = dir();
        std::fs::write(outside.path().join("secret.toml"), GOOD).unwrap();
        let d = dir();
        std::fs::write(d.path().join("inside.toml"), GOOD).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.toml"),
            d.path().join("escape.toml"),
        )
        .unwrap();
        std::os::unix::fs::symlink(d.path().join("inside.toml"), d.path().join("alias.toml"))
            .unwrap();
        let shelf = Shelf::open(d.path()).unwrap();
        let list = shelf.list();
        let escape = list.iter().find(|p| p.name == "escape").unwrap();
        assert!(escape.error.as_deref().unwrap().contains("out of"));
        assert!(shelf.load("escape").unwrap().is_err());
        assert!(shelf.load("alias").unwrap().is_ok());
    }

    #[test]
    fn lists_at_most_its_limit() {
        let d = dir();
        for i in 0..MAX_LISTED + 10 {
            std::fs::write(d.path().join(format!("p{i:03}.toml")), GOOD).unwrap();
        }
        let shelf = Shelf::open(d.path()).unwrap();
        let list = shelf.list();
        assert_eq!(list.len(), MAX_LISTED);
        assert_eq!(list[0].name, "p000");
        assert!(shelf.load(&format!("p{:03}", MAX_LISTED + 5)).is_none());
    }
}
