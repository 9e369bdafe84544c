//! `--data-dir`: where each tenant's state lives, by default the platform's per-user data
//! folder (never the working directory, which a client such as Claude Desktop starts servers in
//! without saying where), made and checked writable before anything starts.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// Why there is no data directory to start with; each says what to do.
#[derive(Debug, thiserror::Error)]
pub(super) enum DataDirError {
    #[error(
        "no data directory: neither XDG_DATA_HOME (an absolute path) nor HOME is set. Pass \
         --data-dir <a folder you can write>."
    )]
    NoDefault,
    #[error("cannot create the data directory {}: {}. {}", .path.display(), reason(.source), hint(*.given))]
    Create {
        path: PathBuf,
        source: io::Error,
        /// Whether `--data-dir` named it (else it is the default).
        given: bool,
    },
    #[error("cannot write in the data directory {}: {}. {}", .path.display(), reason(.source), hint(*.given))]
    Write {
        path: PathBuf,
        source: io::Error,
        given: bool,
    },
}

/// The per-user default: `$XDG_DATA_HOME/crm-host`, else `$HOME/.local/share/crm-host`. As the
/// XDG spec says, an XDG_DATA_HOME that is empty or relative is ignored.
pub(super) fn default_dir(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("XDG_DATA_HOME")
        .filter(|dir| dir.is_absolute())
        .or_else(|| set("HOME").map(|home| home.join(".local").join("share")))
        .map(|base| base.join("crm-host"))
}

/// The data directory `--data-dir` names, else the default; not made.
pub(super) fn resolve(given: Option<&Path>) -> Result<PathBuf, DataDirError> {
    match given {
        Some(dir) => Ok(dir.to_path_buf()),
        None => default_dir(|name| std::env::var_os(name)).ok_or(DataDirError::NoDefault),
    }
}

/// The data directory, made (0700 folders) and checked writable, so that a host that could
/// not keep its state says so before it starts, in one line, rather than failing later.
pub(super) fn prepare(given: Option<&Path>) -> Result<PathBuf, DataDirError> {
    let path = resolve(given)?;
    let given = given.is_some();
    if let Err(source) = crate::private_fs::create_dir_all(&path) {
        return Err(DataDirError::Create {
            path,
            source,
            given,
        });
    }
    // A folder that exists may still be another user's: make and remove one of our own in it.
    let probe = path.join(format!(".crm-host-probe-{}", std::process::id()));
    let written = std::fs::create_dir(&probe).and_then(|()| std::fs::remove_dir(&probe));
    match written {
        Ok(()) => Ok(path),
        Err(source) => Err(DataDirError::Write {
            path,
            source,
            given,
        }),
    }
}

/// An I/O error as a person reads it: "Permission denied", without "(os error 13)".
fn reason(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text,
    }
}

/// What to do about a data directory that cannot be used: another `--data-dir`, or (for the
/// default) another XDG_DATA_HOME.
fn hint(given: bool) -> &'static str {
    if given {
        "Pass --data-dir <a folder you can write>."
    } else {
        "Pass --data-dir <a folder you can write> or set XDG_DATA_HOME."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_default_is_the_platform_data_folder_never_the_working_directory() {
        let both = env(&[("XDG_DATA_HOME", "/xdg"), ("HOME", "/home/u")]);
        assert_eq!(default_dir(both), Some(PathBuf::from("/xdg/crm-host")));
        let home = env(&[("HOME", "/home/u")]);
        assert_eq!(
            default_dir(home),
            Some(PathBuf::from("/home/u/.local/share/crm-host"))
        );
        for ignored in ["", "relative/dir"] {
            let vars = env(&[("XDG_DATA_HOME", ignored), ("HOME", "/home/u")]);
            assert_eq!(
                default_dir(vars),
                Some(PathBuf::from("/home/u/.local/share/crm-host")),
                "{ignored:?}"
            );
        }
        assert_eq!(default_dir(env(&[("HOME", "")])), None);
        assert_eq!(default_dir(env(&[])), None);
    }

    #[test]
    fn a_data_directory_that_cannot_be_made_says_why_and_what_to_do_in_one_line() {
        let dir = std::env::temp_dir().join(format!("crm-data-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a-file");
        std::fs::write(&file, b"").unwrap();
        let under_a_file = file.join("x");
        let error = prepare(Some(&under_a_file)).unwrap_err();
        let said = error.to_string();
        assert!(matches!(error, DataDirError::Create { given: true, .. }));
        assert_eq!(
            said,
            format!(
                "cannot create the data directory {}: Not a directory. Pass --data-dir <a \
                 folder you can write>.",
                under_a_file.display()
            )
        );
        let default = DataDirError::Create {
            path: "/x/y".into(),
            source: io::Error::from_raw_os_error(13),
            given: false,
        };
        assert_eq!(
            default.to_string(),
            "cannot create the data directory /x/y: Permission denied. Pass --data-dir <a \
             folder you can write> or set XDG_DATA_HOME."
        );

        let made = prepare(Some(&dir.join("data"))).unwrap();
        assert!(made.is_dir());
        assert_eq!(
            std::fs::read_dir(&made).unwrap().count(),
            0,
            "the probe is gone"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
