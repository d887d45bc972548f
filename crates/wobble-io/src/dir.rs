//! The output folder of a run, reached only through directory handles.
//!
//! Every file wobble creates below the folder is opened relative to a handle of
//! its directory (`openat`) with `O_NOFOLLOW`, and every subfolder is opened with
//! `O_DIRECTORY | O_NOFOLLOW`: a symbolic link planted anywhere below the folder,
//! where a file or a subfolder would go, is an error and its target is never
//! opened. The folder itself is the user's choice and may be reached through links.
//!
//! Files appear atomically: [`OutDir::write_atomic`] writes `.NAME.partial` in the
//! same directory and renames it over `NAME`, so a reader (or a run killed at any
//! instant) sees the old complete file or the new complete file, never a part.
//! Durable writes (checkpoints, the summary, the manifest's last update) also sync
//! the file before the rename and the directory after it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Suffix of the temporary files of atomic writes (`.NAME.partial`).
pub const PARTIAL_SUFFIX: &str = ".partial";

/// A directory below the output folder (or the folder itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sub {
    /// The output folder.
    Root,
    /// `frames/`.
    Frames,
}

impl Sub {
    /// Path relative to the output folder, for messages.
    fn rel(self, name: &str) -> String {
        match self {
            Sub::Root => name.to_owned(),
            Sub::Frames => format!("frames/{name}"),
        }
    }
}

/// The open output folder: a handle of the folder and, once made, of `frames/`.
#[derive(Debug)]
pub struct OutDir {
    path: PathBuf,
    root: OwnedFd,
    frames: Option<OwnedFd>,
}

/// An error naming the file, with the cause.
fn named(path: &Path, rel: &str, what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("cannot {what} {}: {e}", path.join(rel).display()))
}

fn link_error(path: &Path, rel: &str) -> io::Error {
    io::Error::other(format!(
        "{} is a symbolic link; wobble never follows links below its output folder (remove the link or choose another --out)",
        path.join(rel).display()
    ))
}

impl OutDir {
    /// Creates (with parents) and opens the folder at `path`, and takes an
    /// exclusive lock on it (`flock`) that lasts as long as the handle: a second
    /// wobble process that opens the same folder to run, overwrite or resume is
    /// refused while the first one has it, instead of both writing the same files.
    /// (The lock is advisory: other programs are not kept out; on a file system
    /// that has no locks the folder is used without one.)
    pub fn open(path: &Path) -> io::Result<OutDir> {
        std::fs::create_dir_all(path).map_err(|e| named(path, "", "create the output folder", e))?;
        let root = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| named(path, "", "open the output folder", e))?;
        match rustix::fs::flock(&root, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "{} is in use by another wobble process (it holds the folder's lock): wait until it has ended, or choose another --out",
                        path.display()
                    ),
                ));
            }
            // A file system without locks (some network and FUSE mounts): run
            // without one rather than refuse every run there.
            Err(_) => {}
        }
        Ok(OutDir { path: path.to_owned(), root, frames: None })
    }

    /// The folder's path, as given.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fd(&self, sub: Sub) -> io::Result<&OwnedFd> {
        match sub {
            Sub::Root => Ok(&self.root),
            Sub::Frames => self.frames.as_ref().ok_or_else(|| io::Error::other("frames/ is not open")),
        }
    }

    /// Opens `frames/`, creating it when absent; a link there is an error.
    pub fn open_frames(&mut self) -> io::Result<()> {
        if self.frames.is_some() {
            return Ok(());
        }
        self.frames = Some(self.open_subdir("frames", true)?.expect("created"));
        Ok(())
    }

    /// Opens subfolder `name` without following a link; `None` when it is absent
    /// and `create` is false.
    fn open_subdir(&self, name: &str, create: bool) -> io::Result<Option<OwnedFd>> {
        if create {
            match rustix::fs::mkdirat(&self.root, name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(named(&self.path, name, "create", e)),
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::openat(&self.root, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(fd)),
            Err(rustix::io::Errno::NOENT) if !create => Ok(None),
            // O_NOFOLLOW on a link fails with ELOOP; O_DIRECTORY on a link with ENOTDIR.
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) if self.is_link(Sub::Root, name) => {
                Err(link_error(&self.path, name))
            }
            Err(e) => Err(named(&self.path, name, "open", e)),
        }
    }

    /// The type of entry `name` in `sub` without following links (`None`: absent).
    pub fn kind(&self, sub: Sub, name: &str) -> io::Result<Option<FileType>> {
        match rustix::fs::statat(self.fd(sub)?, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(named(&self.path, &sub.rel(name), "inspect", e)),
        }
    }

    fn is_link(&self, sub: Sub, name: &str) -> bool {
        matches!(self.kind(sub, name), Ok(Some(FileType::Symlink)))
    }

    /// Writes `data` to `name` in `sub` atomically (temporary file, then rename);
    /// `durable` also syncs the file before and the directory after the rename.
    /// A link or a folder where the file would go is an error.
    pub fn write_atomic(&self, sub: Sub, name: &str, data: &[u8], durable: bool) -> io::Result<()> {
        let rel = sub.rel(name);
        match self.kind(sub, name)? {
            None | Some(FileType::RegularFile) => {}
            Some(FileType::Symlink) => return Err(link_error(&self.path, &rel)),
            Some(_) => return Err(named(&self.path, &rel, "replace", "it is not a regular file")),
        }
        let dir = self.fd(sub)?;
        let tmp = format!(".{name}{PARTIAL_SUFFIX}");
        // A leftover of a killed run (or anything planted there): unlink the entry
        // itself, never what it may point to.
        match rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(named(&self.path, &sub.rel(&tmp), "remove", e)),
        }
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir, tmp.as_str(), flags, Mode::from_raw_mode(0o644))
            .map_err(|e| named(&self.path, &sub.rel(&tmp), "create", e))?;
        let mut file = File::from(fd);
        let written = file.write_all(data).and_then(|()| if durable { file.sync_all() } else { Ok(()) });
        drop(file);
        if let Err(e) = written {
            let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
            return Err(io::Error::new(e.kind(), format!("cannot write {}: {e}", self.path.join(&rel).display())));
        }
        rustix::fs::renameat(dir, tmp.as_str(), dir, name).map_err(|e| named(&self.path, &rel, "rename into", e))?;
        if durable {
            rustix::fs::fsync(dir).map_err(|e| named(&self.path, &sub.rel(""), "sync", e))?;
        }
        Ok(())
    }

    /// Reads regular file `name` in `sub` (`None`: absent); a link, or anything
    /// but a regular file (a FIFO would block the read forever), is an error.
    pub fn read(&self, sub: Sub, name: &str) -> io::Result<Option<Vec<u8>>> {
        // Non-blocking, so that opening a FIFO returns at once; checked below.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(self.fd(sub)?, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => return Err(link_error(&self.path, &sub.rel(name))),
            Err(e) => return Err(named(&self.path, &sub.rel(name), "open", e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| named(&self.path, &sub.rel(name), "inspect", e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(named(&self.path, &sub.rel(name), "read", "it is not a regular file"));
        }
        let mut data = Vec::new();
        File::from(fd).read_to_end(&mut data).map_err(|e| named(&self.path, &sub.rel(name), "read", e))?;
        Ok(Some(data))
    }

    /// Removes regular file `name` in `sub` if present; a link there is an error
    /// (it is not wobble's to remove).
    pub fn remove_file(&self, sub: Sub, name: &str) -> io::Result<()> {
        match self.kind(sub, name)? {
            None => Ok(()),
            Some(FileType::RegularFile) => rustix::fs::unlinkat(self.fd(sub)?, name, AtFlags::empty())
                .map_err(|e| named(&self.path, &sub.rel(name), "remove", e)),
            Some(FileType::Symlink) => Err(link_error(&self.path, &sub.rel(name))),
            Some(_) => Err(named(&self.path, &sub.rel(name), "remove", "it is not a regular file")),
        }
    }

    /// Names of the entries of `sub` (without `.` and `..`), sorted.
    pub fn list(&self, sub: Sub) -> io::Result<Vec<String>> {
        let dup = rustix::io::dup(self.fd(sub)?).map_err(|e| named(&self.path, &sub.rel(""), "list", e))?;
        let mut dir = rustix::fs::Dir::new(dup).map_err(|e| named(&self.path, &sub.rel(""), "list", e))?;
        // The duplicate shares the handle's position: start from the beginning.
        dir.rewind();
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(|e| named(&self.path, &sub.rel(""), "list", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != "." && name != ".." {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Opens `frames/` if it exists (for listing and removal), without creating it.
    pub fn open_frames_if_present(&mut self) -> io::Result<bool> {
        if self.frames.is_none() {
            self.frames = self.open_subdir("frames", false)?;
        }
        Ok(self.frames.is_some())
    }

    /// Removes `frames/` if it is empty (and forgets its handle).
    pub fn remove_frames_dir_if_empty(&mut self) -> io::Result<()> {
        if self.open_frames_if_present()? && self.list(Sub::Frames)?.is_empty() {
            self.frames = None;
            rustix::fs::unlinkat(&self.root, "frames", AtFlags::REMOVEDIR)
                .map_err(|e| named(&self.path, "frames", "remove", e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wobble-outdir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn atomic_write_replaces_the_file_and_leaves_no_temporary() {
        let path = scratch("atomic");
        let mut dir = OutDir::open(&path).unwrap();
        dir.open_frames().unwrap();
        dir.write_atomic(Sub::Frames, "a.txt", b"first", false).unwrap();
        dir.write_atomic(Sub::Frames, "a.txt", b"second", true).unwrap();
        assert_eq!(std::fs::read(path.join("frames/a.txt")).unwrap(), b"second");
        assert_eq!(dir.list(Sub::Frames).unwrap(), vec!["a.txt".to_owned()]);
        assert_eq!(dir.read(Sub::Frames, "a.txt").unwrap().unwrap(), b"second");
        assert_eq!(dir.read(Sub::Root, "absent").unwrap(), None);
    }

    #[test]
    fn a_folder_open_for_a_run_is_refused_to_a_second_opener_until_released() {
        let path = scratch("lock");
        let first = OutDir::open(&path).unwrap();
        let e = OutDir::open(&path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        assert!(e.to_string().contains("in use by another wobble process"), "{e}");
        drop(first);
        OutDir::open(&path).expect("the lock ends with the handle");
    }

    #[test]
    fn a_fifo_where_a_file_is_read_is_refused_without_blocking() {
        let path = scratch("fifo");
        let dir = OutDir::open(&path).unwrap();
        let made = std::process::Command::new("mkfifo").arg(path.join("run.json")).status().unwrap();
        assert!(made.success());
        let e = dir.read(Sub::Root, "run.json").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn links_below_the_folder_are_refused_and_their_targets_untouched() {
        let path = scratch("links");
        let target = scratch("links-target");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("victim.txt"), b"keep me").unwrap();
        std::fs::create_dir_all(&path).unwrap();
        std::os::unix::fs::symlink(target.join("victim.txt"), path.join("summary.json")).unwrap();
        std::os::unix::fs::symlink(&target, path.join("frames")).unwrap();
        let mut dir = OutDir::open(&path).unwrap();
        let e = dir.write_atomic(Sub::Root, "summary.json", b"x", true).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        let e = dir.read(Sub::Root, "summary.json").unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        let e = dir.remove_file(Sub::Root, "summary.json").unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        let e = dir.open_frames().unwrap_err();
        assert!(e.to_string().contains("frames is a symbolic link"), "{e}");
        assert_eq!(std::fs::read(target.join("victim.txt")).unwrap(), b"keep me");
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 1);
    }
}
