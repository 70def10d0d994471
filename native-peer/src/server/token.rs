//! The access token: given with `--token`, or generated once and kept in the data directory so
//! the URL a phone bookmarked keeps working across restarts.

use std::io;
use std::path::{Path, PathBuf};

use crate::engine::wire::{cookie_to_hex, random_cookie};

/// The data directory: `--data-dir`, else `$XDG_DATA_HOME/perfpeer`, else `~/.local/share/perfpeer`.
pub fn data_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("perfpeer");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/perfpeer"),
        None => PathBuf::from("/var/lib/perfpeer"),
    }
}

/// Reads the stored token, or creates one (readable by the owner only).
pub fn load_or_create(dir: &Path) -> io::Result<String> {
    let path = dir.join("token");
    match std::fs::read_to_string(&path) {
        Ok(t) if is_valid(t.trim()) => return Ok(t.trim().to_string()),
        Ok(_) => {
            tracing::warn!(path = %path.display(), "stored token is malformed; making a new one")
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    let token = cookie_to_hex(&random_cookie());
    write_private(&path, &token)?;
    Ok(token)
}

/// Whether `t` is acceptable as a token: 8 to 128 URL-safe characters.
pub fn is_valid(t: &str) -> bool {
    (8..=128).contains(&t.len())
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b))
}

fn write_private(path: &Path, text: &str) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_created_once_and_kept() {
        let dir = std::env::temp_dir().join(format!("perfpeer-token-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = load_or_create(&dir).unwrap();
        assert!(is_valid(&first));
        assert_eq!(load_or_create(&dir).unwrap(), first);
        std::fs::write(dir.join("token"), "bad token!").unwrap();
        let replaced = load_or_create(&dir).unwrap();
        assert_ne!(replaced, first);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn token_syntax() {
        assert!(is_valid("abcdefgh"));
        assert!(!is_valid("short"));
        assert!(!is_valid("has space in it"));
        assert!(!is_valid("#fragment"));
    }
}
