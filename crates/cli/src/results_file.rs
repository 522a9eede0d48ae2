//! Writing results to a path the user named (`--output` of `sweep`, `locks`, `latency`, `corun`
//! and `profile`, `latency --plot`, `plot`'s figure, `reproduce`'s directory) without destroying
//! what the path holds by mistake, and without losing what was measured when a write fails.
//!
//! What the path names decides how it is written:
//!
//! - **Nothing yet, or a regular file**: the bytes go to a new file beside it
//!   (`NAME.PID.partial`), which is then renamed over it. A reader (`standings` on the file of a
//!   sweep still running) never sees half a report, and a run killed while writing leaves the
//!   previous complete version. The new file takes the replaced one's permission bits; it is a new
//!   file all the same, so hard links to the old one keep the old content.
//! - **A symbolic link**: followed to its final target, which is written as above; the link stays
//!   a link. A dangling link's target is created.
//! - **A character or block device, or a FIFO**: opened for writing before measuring, as a shell
//!   redirection would (so a FIFO waits there for its reader), and written once, with the final
//!   results: a stream cannot be rewritten, so the snapshots taken while measuring skip it.
//!   `/dev/null` takes the results and stays a device; `/dev/full` fails the write with its OS
//!   error.
//! - **A directory or a socket**: refused before measuring.
//!
//! The check before measuring (`ResultsFile::open`) changes nothing that exists: for a file it
//! creates and removes a uniquely named file in the target's directory, so a command that then
//! stops on bad input leaves an earlier results file as it was.
//!
//! A write that fails after measuring does not drop the results. They go to a rescue file in the
//! temp directory (`parbench-rescued-PID-NAME`, same format), or to stdout if even that fails, and
//! the error line ([`CliError::WrittenElsewhere`]) says where. A snapshot that fails goes to the
//! rescue file likewise and the measurement goes on; the final write tries the named path again
//! (and removes the rescue file when it succeeds).
//!
//! A directory of several files (`reproduce -o DIR`, `ResultsDirectory`) is checked before
//! measuring too: refused when it is not a directory, and probed with a file created and removed
//! in it; a missing one is made for the probe and removed again (a command that stops before
//! writing leaves no empty directory behind), then made when its files are written. Its files are regular files, each replaced as above (an entry of
//! another kind under a file's name fails that write). When one cannot be written, every file
//! goes to a rescue directory `parbench-rescued-PID-DIRNAME` in the temp directory, so that the
//! report stays whole in one place.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::args::FILE_PARAMETERS;
use crate::error::{CliError, Rescue};

/// Symbolic links followed at most before giving up, Linux's own limit (`ELOOP` beyond it).
const MAX_LINKS: usize = 40;

/// Names tried for a new file beside another before giving up (each taken one is skipped).
const MAX_NAME_ATTEMPTS: usize = 100;

/// A path that results are written to, checked before measuring.
#[derive(Debug)]
pub(crate) struct ResultsFile {
    /// The path as the user gave it: errors name it, and links are followed from it at every write.
    path: PathBuf,
    destination: Destination,
    /// What the bytes are, for messages: `results`, `figure`.
    what: &'static str,
    /// The extension of their format, for the rescue file's name: `json`, `svg`.
    extension: &'static str,
    /// The rescue file, once a write failed.
    rescue: Option<PathBuf>,
}

#[derive(Debug)]
enum Destination {
    /// A regular file or a path that does not exist yet (after links): replaced atomically.
    Replaced,
    /// A device or FIFO, opened before measuring: written once, at the end.
    Stream(File),
}

impl ResultsFile {
    /// The path as the user gave it.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Checks that `path` can take `what` (in a format with file extension `extension`) without
    /// changing anything that exists; a device or FIFO is opened now (see the module docs).
    ///
    /// # Errors
    /// [`CliError::Write`] naming `path` for a missing or unwritable directory, a directory, a
    /// socket, a device or FIFO that cannot be opened, or a loop of symbolic links.
    pub(crate) fn open(
        path: &Path,
        what: &'static str,
        extension: &'static str,
    ) -> Result<ResultsFile, CliError> {
        let error = |source| CliError::Write {
            path: path.to_owned(),
            source,
        };
        let mut target = follow_links(path).map_err(error)?;
        let mut found = fs::metadata(&target);
        if let (Err(missing), Ok(magic)) = (&found, fs::metadata(path))
            && missing.kind() == io::ErrorKind::NotFound
        {
            // A link whose target names no path, which only the kernel can follow:
            // `/dev/stdout` → `/proc/self/fd/1` → `pipe:[…]`. Opened by its own name it is the
            // pipe (or socket) it stands for.
            target = path.to_owned();
            found = Ok(magic);
        }
        let destination = match found {
            Err(missing) if missing.kind() == io::ErrorKind::NotFound => {
                check_directory(&target).map_err(error)?;
                Destination::Replaced
            }
            Err(other) => return Err(error(other)),
            Ok(found) if found.is_file() => {
                check_directory(&target).map_err(error)?;
                Destination::Replaced
            }
            Ok(found) if found.is_dir() => {
                return Err(error(io::Error::from_raw_os_error(libc::EISDIR)));
            }
            Ok(found) if found.file_type().is_socket() => {
                // open(2) would fail with "No such device or address", which says less.
                return Err(error(io::Error::other(
                    "it is a socket, which cannot be opened as a file",
                )));
            }
            Ok(_) => Destination::Stream(
                OpenOptions::new()
                    .write(true)
                    .open(&target)
                    .map_err(error)?,
            ),
        };
        Ok(ResultsFile {
            path: path.to_owned(),
            destination,
            what,
            extension,
            rescue: None,
        })
    }

    /// Whether this is a stream opened on the file this process's stdout is (`-o /dev/stdout`),
    /// where the command then writes only these results and not its table beside them: the two
    /// mixed would make neither readable.
    pub(crate) fn is_stdout(&self) -> bool {
        use std::os::fd::AsFd;
        use std::os::unix::fs::MetadataExt;
        let Destination::Stream(file) = &self.destination else {
            return false;
        };
        let stdout = io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(|fd| File::from(fd).metadata());
        match (file.metadata(), stdout) {
            (Ok(ours), Ok(stdout)) => ours.dev() == stdout.dev() && ours.ino() == stdout.ino(),
            _ => false,
        }
    }

    /// Refuses a path that names the same file as `other`, which the command also reads or
    /// writes (`role` says as what, e.g. "the results file plot reads"): writing there would
    /// replace that file's content with these bytes — a sweep's `--input` overwritten by its
    /// results after the first round, `plot r.json -o r.json` replacing the results with the
    /// figure. The same file is found through links, relative paths and hard links; a device
    /// or FIFO (`/dev/null` for both) is a stream, not content, and is not refused.
    ///
    /// # Errors
    /// [`CliError::Usage`] naming both paths.
    pub(crate) fn refuse_same_file(&self, other: &Path, role: &str) -> Result<(), CliError> {
        if let Destination::Stream(_) = self.destination {
            return Ok(());
        }
        if !same_file(&self.path, other) {
            return Ok(());
        }
        let (path, other) = (self.path.display(), other.display());
        let names = if path.to_string() == other.to_string() {
            format!("{path}")
        } else {
            format!("{path} (as {other})")
        };
        Err(CliError::Usage(format!(
            "{names} is also {role}: writing the {} there would replace it; name another file",
            self.what
        )))
    }

    /// [`ResultsFile::refuse_same_file`] for every file a kernel reads among `params` (`matrix`,
    /// `input`, given with their own flag or as `--param`).
    ///
    /// # Errors
    /// [`CliError::Usage`] naming the path and the parameter.
    pub(crate) fn refuse_kernel_inputs(&self, params: &[(String, String)]) -> Result<(), CliError> {
        params
            .iter()
            .filter(|(name, _)| FILE_PARAMETERS.contains(&name.as_str()))
            .try_for_each(|(name, value)| {
                self.refuse_same_file(Path::new(value), &format!("the kernel's {name} file"))
            })
    }

    /// Rewrites the file with the results so far, so that an interruption keeps them (a device
    /// or FIFO gets only the final results). A failure does not stop the measurement: the
    /// snapshot goes to the rescue file instead, and the first time the returned line says so,
    /// for the progress display.
    pub(crate) fn snapshot(&mut self, bytes: &[u8]) -> Option<String> {
        if let Destination::Stream(_) = self.destination {
            return None;
        }
        let source = replace(&self.path, bytes).err()?;
        let first = self.rescue.is_none();
        let rescued = self.save_rescue(bytes);
        first.then(|| {
            let meanwhile = match rescued {
                Ok(rescue) => format!("saving the {} to {} meanwhile", self.what, rescue.display()),
                Err(error) => format!("no rescue file either ({error})"),
            };
            format!(
                "cannot write {} ({source}); {meanwhile}",
                self.path.display()
            )
        })
    }

    /// Writes the final results: to the named path, else to the rescue file, else to stdout.
    ///
    /// # Errors
    /// [`CliError::WrittenElsewhere`] when the named path failed, saying where the results went.
    pub(crate) fn finish(mut self, bytes: &[u8]) -> Result<(), CliError> {
        let written = match &mut self.destination {
            Destination::Replaced => replace(&self.path, bytes),
            Destination::Stream(file) => file.write_all(bytes).and_then(|()| file.flush()),
        };
        let Err(source) = written else {
            if let Some(rescue) = &self.rescue {
                // Our own file, now a stale copy of what the named path holds.
                let _ = fs::remove_file(rescue);
            }
            return Ok(());
        };
        let rescue = rescue_or_stdout(self.save_rescue(bytes), &[bytes]);
        Err(CliError::WrittenElsewhere {
            path: self.path.clone(),
            source,
            what: self.what,
            rescue,
        })
    }

    /// Writes `bytes` to the rescue file, made in the temp directory on first use.
    fn save_rescue(&mut self, bytes: &[u8]) -> io::Result<PathBuf> {
        let rescue = match &self.rescue {
            Some(rescue) => rescue.clone(),
            None => {
                let rescue = self.new_rescue_file()?;
                self.rescue = Some(rescue.clone());
                rescue
            }
        };
        replace(&rescue, bytes)?;
        Ok(rescue)
    }

    /// A new, empty file `parbench-rescued-PID-NAME` in the temp directory; NAME is the named
    /// file's, with the format's extension added when it lacks it (`/dev/full` → `full.json`).
    fn new_rescue_file(&self) -> io::Result<PathBuf> {
        let mut name = self
            .path
            .file_name()
            .unwrap_or("results".as_ref())
            .to_owned();
        let has_extension = self
            .path
            .extension()
            .is_some_and(|found| found.eq_ignore_ascii_case(self.extension));
        if !has_extension {
            name.push(".");
            name.push(self.extension);
        }
        let (rescue, _) = create_first_free(rescue_names(&name), create_file)?;
        Ok(rescue)
    }
}

/// A directory that a command writes several files into (`reproduce -o DIR`), checked before
/// measuring; see the module docs.
#[derive(Debug)]
pub(crate) struct ResultsDirectory {
    /// The path as the user gave it: errors name it and the files in it.
    path: PathBuf,
}

impl ResultsDirectory {
    /// Checks that files can be written into `path`: an unwritable place fails before measuring
    /// instead of losing the results after. A missing `path` (and its missing parents) is made
    /// for the check and removed again, so a command that stops before writing leaves none
    /// behind; [`ResultsDirectory::finish`] makes it.
    ///
    /// # Errors
    /// [`CliError::Write`] naming `path` when it cannot be made, is not a directory (after
    /// links), or no file can be created in it.
    pub(crate) fn open(path: &Path) -> Result<ResultsDirectory, CliError> {
        let error = |source| CliError::Write {
            path: path.to_owned(),
            source,
        };
        if fs::metadata(path).is_ok_and(|found| !found.is_dir()) {
            // create_dir would say "File exists", which does not say what is wrong.
            return Err(error(io::Error::from_raw_os_error(libc::ENOTDIR)));
        }
        let made = make_missing_directories(path).map_err(error)?;
        let checked = check_directory(&path.join("parbench-probe"));
        remove_made_directories(&made);
        checked.map_err(error)?;
        Ok(ResultsDirectory {
            path: path.to_owned(),
        })
    }

    /// The path as the user gave it.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `files` (name in the directory, bytes) in order, each replaced atomically. When one
    /// fails, all of them go to a new rescue directory in the temp directory (to stdout in order
    /// if even that fails): the files already written may be a mix of this run and an earlier
    /// one, the rescue directory is this run's whole report.
    ///
    /// # Errors
    /// [`CliError::WrittenElsewhere`] naming the first file that failed and where the `what`
    /// (`report`) went.
    pub(crate) fn finish(
        self,
        what: &'static str,
        files: &[(&str, &[u8])],
    ) -> Result<(), CliError> {
        // Made only now that there is something to put in it (see `open`).
        let failed = fs::create_dir_all(&self.path)
            .err()
            .map(|source| (self.path.clone(), source))
            .or_else(|| {
                files.iter().find_map(|(name, bytes)| {
                    let path = self.path.join(name);
                    replace(&path, bytes).err().map(|source| (path, source))
                })
            });
        let Some((path, source)) = failed else {
            return Ok(());
        };
        let saved = self.save_rescue(files);
        let bytes: Vec<&[u8]> = files.iter().map(|(_, bytes)| *bytes).collect();
        Err(CliError::WrittenElsewhere {
            path,
            source,
            what,
            rescue: rescue_or_stdout(saved, &bytes),
        })
    }

    /// Writes `files` into a new directory `parbench-rescued-PID-DIRNAME` in the temp directory.
    fn save_rescue(&self, files: &[(&str, &[u8])]) -> io::Result<PathBuf> {
        let name = self.path.file_name().unwrap_or("report".as_ref());
        let (rescue, ()) = create_first_free(rescue_names(name), |path| fs::create_dir(path))?;
        for (file, bytes) in files {
            fs::write(rescue.join(file), bytes)?;
        }
        Ok(rescue)
    }
}

/// Prints measured results to stdout. `only_copy`: they went nowhere else (no `--output`), so
/// when stdout fails (a full disk behind `> r.json`) they are saved to a rescue file
/// `parbench-rescued-PID-stdout.EXTENSION` in the temp directory, in the same format, instead of
/// being lost with the error. A closed pipe (`| head`) is the reader's choice and ends the
/// output quietly.
///
/// # Errors
/// [`CliError::WrittenElsewhere`] (path `-`) saying where the results went, or
/// [`CliError::Write`] when they went nowhere else or no rescue file could be made either.
pub(crate) fn print_results(
    bytes: &[u8],
    extension: &str,
    only_copy: bool,
) -> Result<(), CliError> {
    let mut stdout = io::stdout().lock();
    let source = match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() != io::ErrorKind::BrokenPipe => error,
        _ => return Ok(()),
    };
    let stdout_error = |source| CliError::Write {
        path: PathBuf::from("-"),
        source,
    };
    if !only_copy {
        return Err(stdout_error(source));
    }
    let name = format!("stdout.{extension}");
    let saved = create_first_free(rescue_names(name.as_ref()), create_file)
        .and_then(|(rescue, mut file)| file.write_all(bytes).map(|()| rescue));
    match saved {
        Ok(rescue) => Err(CliError::WrittenElsewhere {
            path: PathBuf::from("-"),
            source,
            what: "results",
            rescue: Rescue::File(rescue),
        }),
        Err(_) => Err(stdout_error(source)),
    }
}

/// Where bytes went whose named path failed: the rescue file or directory `saved`, else stdout
/// (`chunks` in order), else nowhere.
fn rescue_or_stdout(saved: io::Result<PathBuf>, chunks: &[&[u8]]) -> Rescue {
    if let Ok(rescue) = saved {
        return Rescue::File(rescue);
    }
    let mut stdout = io::stdout().lock();
    let written = chunks
        .iter()
        .try_for_each(|chunk| stdout.write_all(chunk))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => Rescue::Stdout,
        Err(error) => Rescue::Lost(error),
    }
}

/// Names for a rescue of `name` in the temp directory: `parbench-rescued-PID-NAME`, then
/// `parbench-rescued-PID.N-NAME`.
fn rescue_names(name: &OsStr) -> impl Iterator<Item = PathBuf> {
    let directory = std::env::temp_dir();
    let pid = std::process::id();
    let name = name.to_owned();
    (0..MAX_NAME_ATTEMPTS).map(move |attempt| {
        let mut candidate = OsString::from(match attempt {
            0 => format!("parbench-rescued-{pid}-"),
            n => format!("parbench-rescued-{pid}.{n}-"),
        });
        candidate.push(&name);
        directory.join(candidate)
    })
}

/// Replaces the file at `path` (after links) with `bytes` through a new file beside it and a
/// rename, removing that new file when anything fails.
///
/// # Errors
/// The OS error of creating, writing or renaming.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = follow_links(path)?;
    let (temporary, file) = create_beside(&target)?;
    let written = fill_and_rename(file, &temporary, &target, bytes);
    if written.is_err() {
        // Ours, and useless once the rename did not happen; a failure to remove it changes nothing.
        let _ = fs::remove_file(&temporary);
    }
    written
}

fn fill_and_rename(
    mut file: File,
    temporary: &Path,
    target: &Path,
    bytes: &[u8],
) -> io::Result<()> {
    file.write_all(bytes)?;
    if let Ok(replaced) = fs::metadata(target) {
        // Checked before measuring (a file of a results directory is not), but a path can change
        // since: a rename must never put a regular file in the place of a device, FIFO or socket
        // (as root it would), and cannot replace a directory.
        if replaced.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        if !replaced.is_file() {
            return Err(io::Error::other("it is not a regular file"));
        }
        file.set_permissions(replaced.permissions())?;
    }
    drop(file);
    fs::rename(temporary, target)
}

/// `path` with symbolic links in its last component followed to a path that is not a link
/// (existing or not). Links in the directories above are the OS's to follow.
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_owned();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(found) if found.file_type().is_symlink() => {
                let target = fs::read_link(&current)?;
                // A relative target is relative to the link's directory; `join` keeps an absolute
                // one as it is.
                current = match current.parent() {
                    Some(directory) => directory.join(target),
                    None => target,
                };
            }
            Ok(_) => return Ok(current),
            Err(missing) if missing.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(other) => return Err(other),
        }
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

/// Refuses a file that `paths` list twice, as the same path or another (`./a.json`, a link, a
/// hard link): a command that reads several reports would count that one twice; `consequence`
/// says what that means for it.
///
/// # Errors
/// [`CliError::Usage`] naming the file and both ways it was given.
pub(crate) fn refuse_repeated_files(paths: &[PathBuf], consequence: &str) -> Result<(), CliError> {
    for (index, path) in paths.iter().enumerate() {
        if let Some(first) = paths[..index]
            .iter()
            .find(|earlier| same_file(earlier, path))
        {
            let name = fs::canonicalize(first).unwrap_or_else(|_| first.clone());
            return Err(CliError::Usage(format!(
                "{} is given twice (as {} and {}): {consequence}",
                name.display(),
                first.display(),
                path.display()
            )));
        }
    }
    Ok(())
}

/// Whether `a` and `b` name one file: the same inode when both exist, else the same path once
/// links are followed and the directory is made absolute (a file that does not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        (Err(_), Err(_)) => resolved(a).is_some_and(|a| resolved(b) == Some(a)),
        // One exists and the other does not: two files.
        _ => false,
    }
}

/// `path` with links followed and its directory canonical; `None` when that directory is not
/// there either (nothing can be written to it then, which `ResultsFile::open` reports).
fn resolved(path: &Path) -> Option<PathBuf> {
    let target = follow_links(path).ok()?;
    let directory = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(directory).ok()?.join(target.file_name()?))
}

/// Creates a new file beside `target`, `NAME.PID.partial` (or `NAME.PID.N.partial` when taken):
/// never one that exists, so two processes writing the same target, or a file left by a killed
/// run, cannot collide with it.
fn create_beside(target: &Path) -> io::Result<(PathBuf, File)> {
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let pid = std::process::id();
    let candidates = (0..MAX_NAME_ATTEMPTS).map(|attempt| {
        let mut candidate = name.to_owned();
        candidate.push(match attempt {
            0 => format!(".{pid}.partial"),
            n => format!(".{pid}.{n}.partial"),
        });
        target.with_file_name(candidate)
    });
    create_first_free(candidates, create_file)
}

/// A new file at `path`, never one that exists.
fn create_file(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

/// Makes the first of `candidates` that does not exist yet with `create` (a file, a directory),
/// which must fail with `AlreadyExists` on one that does.
fn create_first_free<T>(
    candidates: impl Iterator<Item = PathBuf>,
    create: impl Fn(&Path) -> io::Result<T>,
) -> io::Result<(PathBuf, T)> {
    for candidate in candidates {
        match create(&candidate) {
            Ok(made) => return Ok((candidate, made)),
            Err(taken) if taken.kind() == io::ErrorKind::AlreadyExists => {}
            Err(other) => return Err(other),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{MAX_NAME_ATTEMPTS} names for a new entry there are all taken"),
    ))
}

/// Makes the directories of `path` that are missing, outermost first, and returns the ones it
/// made (one that appears meanwhile is someone else's and is left out).
///
/// # Errors
/// The OS error of the first that cannot be made; those made before it are removed again.
fn make_missing_directories(path: &Path) -> io::Result<Vec<PathBuf>> {
    let missing: Vec<&Path> = path
        .ancestors()
        .filter(|ancestor| !ancestor.as_os_str().is_empty())
        .take_while(|ancestor| fs::symlink_metadata(ancestor).is_err())
        .collect();
    let mut made = Vec::new();
    for directory in missing.into_iter().rev() {
        match fs::create_dir(directory) {
            Ok(()) => made.push(directory.to_owned()),
            Err(taken) if taken.kind() == io::ErrorKind::AlreadyExists && directory.is_dir() => {}
            Err(error) => {
                remove_made_directories(&made);
                return Err(error);
            }
        }
    }
    Ok(made)
}

/// Removes the directories [`make_missing_directories`] made, innermost first, as long as they
/// are empty: one that something was put in since is no longer ours to remove, nor are its
/// parents.
fn remove_made_directories(made: &[PathBuf]) {
    for directory in made.iter().rev() {
        if fs::remove_dir(directory).is_err() {
            break;
        }
    }
}

/// Checks that a file can be created beside `target`, leaving nothing behind.
fn check_directory(target: &Path) -> io::Result<()> {
    let (probe, file) = create_beside(target)?;
    drop(file);
    fs::remove_file(probe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};
    use std::os::unix::net::UnixListener;

    /// A fresh directory of one test's own, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(test: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "parbench-results-file-{}-{test}",
                std::process::id()
            ));
            // Ignoring the error is right: the directory usually does not exist yet.
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            // A leftover in the temp directory is harmless.
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn open(path: &Path) -> Result<ResultsFile, CliError> {
        ResultsFile::open(path, "results", "json")
    }

    /// The rescue file or directory of a [`CliError::WrittenElsewhere`].
    fn rescued_to(error: &CliError) -> &Path {
        match error {
            CliError::WrittenElsewhere {
                rescue: Rescue::File(rescue),
                ..
            } => rescue,
            _ => panic!("not rescued to a file or directory: {error}"),
        }
    }

    fn mkfifo(path: &Path) {
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `name` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn the_check_before_measuring_changes_nothing() {
        let dir = Scratch::new("check");
        let kept = dir.join("keep.json");
        fs::write(&kept, "earlier results").unwrap();
        let file = open(&kept).unwrap();
        let fresh = open(&dir.join("new.json")).unwrap();
        drop((file, fresh));
        assert_eq!(fs::read_to_string(&kept).unwrap(), "earlier results");
        assert_eq!(names(&dir), ["keep.json"], "no probe left, nothing created");
    }

    #[test]
    fn a_regular_file_is_replaced_keeping_its_permission_bits() {
        let dir = Scratch::new("regular");
        let path = dir.join("r.json");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let mut file = open(&path).unwrap();
        assert_eq!(file.snapshot(b"first"), None);
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");
        file.finish(b"final").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "final");
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(names(&dir), ["r.json"]);
    }

    #[test]
    fn a_symlink_is_followed_to_its_target_and_stays_a_link() {
        let dir = Scratch::new("symlink");
        fs::create_dir(dir.join("data")).unwrap();
        fs::write(dir.join("data/target.json"), "old").unwrap();
        // A relative link in another directory, through a second link: targets are relative to
        // each link's own directory.
        symlink("data/target.json", dir.join("first.json")).unwrap();
        symlink("first.json", dir.join("link.json")).unwrap();
        let link = dir.join("link.json");
        open(&link).unwrap().finish(b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::read_to_string(dir.join("data/target.json")).unwrap(),
            "new"
        );
        assert_eq!(names(&dir.join("data")), ["target.json"]);
    }

    #[test]
    fn a_dangling_symlink_gets_its_target_created() {
        let dir = Scratch::new("dangling");
        symlink("later.json", dir.join("link.json")).unwrap();
        open(&dir.join("link.json"))
            .unwrap()
            .finish(b"new")
            .unwrap();
        assert_eq!(fs::read_to_string(dir.join("later.json")).unwrap(), "new");
        assert!(
            fs::symlink_metadata(dir.join("link.json"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_loop_of_symlinks_is_an_error_not_a_hang() {
        let dir = Scratch::new("loop");
        symlink("b.json", dir.join("a.json")).unwrap();
        symlink("a.json", dir.join("b.json")).unwrap();
        let error = open(&dir.join("a.json")).unwrap_err().to_string();
        assert!(
            error.contains("a.json") && error.contains("symbolic links"),
            "{error}"
        );
    }

    #[test]
    fn a_directory_and_a_socket_are_refused() {
        let dir = Scratch::new("refused");
        fs::create_dir(dir.join("d.json")).unwrap();
        let error = open(&dir.join("d.json")).unwrap_err().to_string();
        assert!(error.contains("Is a directory"), "{error}");
        let _listener = UnixListener::bind(dir.join("s.json")).unwrap();
        let error = open(&dir.join("s.json")).unwrap_err().to_string();
        assert!(error.contains("socket"), "{error}");
        assert_eq!(names(&dir), ["d.json", "s.json"]);
    }

    #[test]
    fn a_path_no_longer_a_regular_file_is_not_replaced_and_no_partial_file_is_left() {
        let dir = Scratch::new("changed");
        let path = dir.join("r.json");
        let mut file = open(&path).unwrap();
        // A FIFO made after the check: renaming over it would turn it into a regular file.
        mkfifo(&path);
        assert!(replace(&path, b"lost?").is_err());
        assert!(fs::metadata(&path).unwrap().file_type().is_fifo());
        assert_eq!(names(&dir), ["r.json"], "no partial file left");
        let note = file.snapshot(b"rescued").unwrap();
        assert!(note.contains("not a regular file"), "{note}");
        let error = file.finish(b"rescued").unwrap_err();
        let rescue = rescued_to(&error);
        assert_eq!(fs::read_to_string(rescue).unwrap(), "rescued");
        fs::remove_file(rescue).unwrap();
        assert!(fs::metadata(&path).unwrap().file_type().is_fifo());
        assert_eq!(names(&dir), ["r.json"], "no partial file left");
    }

    #[test]
    fn a_final_write_that_fails_is_rescued_and_the_error_says_where() {
        let dir = Scratch::new("rescued");
        let gone = dir.join("gone");
        fs::create_dir(&gone).unwrap();
        let file = open(&gone.join("r.json")).unwrap();
        fs::remove_dir(&gone).unwrap();
        let error = file.finish(b"measured").unwrap_err();
        let message = error.to_string();
        let rescue = rescued_to(&error);
        assert!(
            rescue.starts_with(std::env::temp_dir())
                && rescue.to_string_lossy().ends_with("-r.json"),
            "{}",
            rescue.display()
        );
        assert_eq!(fs::read_to_string(rescue).unwrap(), "measured");
        assert!(
            message.contains("gone/r.json")
                && message.contains("No such file")
                && message.contains(&format!("saved the results to {}", rescue.display())),
            "{message}"
        );
        fs::remove_file(rescue).unwrap();
    }

    #[test]
    fn a_rescued_snapshot_is_removed_once_the_final_write_succeeds() {
        let dir = Scratch::new("recovered");
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        let path = sub.join("r.json");
        let mut file = open(&path).unwrap();
        fs::remove_dir(&sub).unwrap();
        let note = file.snapshot(b"so far").unwrap();
        let rescue = file.rescue.clone().unwrap();
        assert!(note.contains(&rescue.display().to_string()), "{note}");
        assert_eq!(fs::read_to_string(&rescue).unwrap(), "so far");
        assert_eq!(file.snapshot(b"more"), None, "said once");
        fs::create_dir(&sub).unwrap();
        file.finish(b"final").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "final");
        assert!(!rescue.exists());
    }

    #[test]
    fn a_fifo_gets_only_the_final_results_and_stays_a_fifo() {
        let dir = Scratch::new("fifo");
        let path = dir.join("r.json");
        mkfifo(&path);
        let reader_path = path.clone();
        let reader = std::thread::spawn(move || fs::read(reader_path).unwrap());
        // Opening waits for the reader, as a shell redirection would.
        let mut file = open(&path).unwrap();
        assert_eq!(file.snapshot(b"so far"), None);
        file.finish(b"final").unwrap();
        assert_eq!(reader.join().unwrap(), b"final");
        assert!(fs::metadata(&path).unwrap().file_type().is_fifo());
    }

    #[test]
    fn a_missing_results_directory_is_checked_without_being_left_behind_and_made_when_written() {
        let dir = Scratch::new("directory-missing");
        fs::create_dir(dir.join("existing")).unwrap();
        ResultsDirectory::open(&dir.join("existing")).unwrap();
        let made = dir.join("a/b");
        let checked = ResultsDirectory::open(&made).unwrap();
        assert_eq!(
            names(&dir),
            ["existing"],
            "nothing made is left, nothing there removed"
        );
        assert!(names(&dir.join("existing")).is_empty(), "no probe left");
        checked.finish("report", &[("r.json", b"r")]).unwrap();
        assert_eq!(names(&made), ["r.json"]);
    }

    #[test]
    fn a_results_directory_is_refused_when_a_file() {
        let dir = Scratch::new("directory-check");
        fs::write(dir.join("file"), "kept").unwrap();
        let error = ResultsDirectory::open(&dir.join("file"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("Not a directory"), "{error}");
        let error = ResultsDirectory::open(&dir.join("file/sub"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("Not a directory"), "{error}");
        assert_eq!(fs::read_to_string(dir.join("file")).unwrap(), "kept");
    }

    #[test]
    fn a_results_directory_that_fails_a_file_is_rescued_whole() {
        let dir = Scratch::new("directory-rescue");
        let report = dir.join("report");
        // Written before the failure, then rescued with the rest all the same.
        fs::create_dir_all(report.join("b.svg")).unwrap();
        let checked = ResultsDirectory::open(&report).unwrap();
        let error = checked
            .finish(
                "report",
                &[("a.md", b"a"), ("b.svg", b"b"), ("c.json", b"c")],
            )
            .unwrap_err();
        let message = error.to_string();
        let rescue = rescued_to(&error);
        assert!(
            message.contains("report/b.svg") && message.contains("Is a directory"),
            "{message}"
        );
        assert!(
            rescue.to_string_lossy().ends_with("-report"),
            "{}",
            rescue.display()
        );
        assert_eq!(names(rescue), ["a.md", "b.svg", "c.json"]);
        assert_eq!(fs::read_to_string(rescue.join("c.json")).unwrap(), "c");
        fs::remove_dir_all(rescue).unwrap();
        assert_eq!(names(&report), ["a.md", "b.svg"], "no partial file left");
    }
}
