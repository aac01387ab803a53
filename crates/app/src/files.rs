//! Gathering files from drops (files and folders, read recursively) and pickers, each
//! named by its path relative to what was opened (`tp2_pp1/rank0.pickle` for a file of
//! a folder, the file's name for a file opened by itself): two runs' files of the same
//! name stay apart in the cards, titles, URL and exports.

use js_sys::{Array, Function, Promise};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    DataTransfer, File, FileList, FileSystemDirectoryEntry, FileSystemDirectoryReader,
    FileSystemEntry, FileSystemFileEntry,
};

/// Whether a file found inside a folder looks like a snapshot (files picked or dropped
/// one by one are always tried: their content decides).
pub fn looks_like_snapshot(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".pickle", ".pkl", ".json", ".gz", ".pt"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// A picked file's path relative to the folder picked (`webkitRelativePath`, not in
/// web-sys), or its name.
fn relative_path(f: &File) -> String {
    js_sys::Reflect::get(f, &"webkitRelativePath".into())
        .ok()
        .and_then(|v| v.as_string())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| f.name())
}

/// The files of a `FileList` (from an `<input type=file>`), with their paths.
pub fn from_list(list: &FileList, from_folder: bool) -> Vec<(String, File)> {
    (0..list.length())
        .filter_map(|i| list.get(i))
        .filter(|f| !from_folder || looks_like_snapshot(&f.name()))
        .map(|f| (relative_path(&f), f))
        .collect()
}

/// A callback-style browser API as a promise: `call(resolve, reject)`.
fn promise(call: impl FnOnce(&Function, &Function)) -> Promise {
    let mut call = Some(call);
    Promise::new(&mut |resolve, reject| {
        if let Some(call) = call.take() {
            call(&resolve, &reject);
        }
    })
}

async fn entry_file(entry: &FileSystemFileEntry) -> Result<File, JsValue> {
    let p = promise(|resolve, reject| entry.file_with_callback_and_callback(resolve, reject));
    Ok(JsFuture::from(p).await?.unchecked_into())
}

async fn read_batch(reader: &FileSystemDirectoryReader) -> Result<Array, JsValue> {
    let p = promise(|resolve, reject| {
        let _ = reader.read_entries_with_callback_and_callback(resolve, reject);
    });
    Ok(JsFuture::from(p).await?.unchecked_into())
}

/// Every snapshot-looking file under a folder entry, recursively, with its path from
/// the dropped folder (which it includes, as a picked folder's files do).
async fn walk(root: FileSystemEntry, out: &mut Vec<(String, File)>) -> Result<(), JsValue> {
    let mut stack = vec![root];
    while let Some(entry) = stack.pop() {
        if entry.is_directory() {
            let dir: FileSystemDirectoryEntry = entry.unchecked_into();
            let reader = dir.create_reader();
            // readEntries returns batches until an empty one.
            loop {
                let batch = read_batch(&reader).await?;
                if batch.length() == 0 {
                    break;
                }
                for child in batch.iter() {
                    stack.push(child.unchecked_into());
                }
            }
        } else if looks_like_snapshot(&entry.name()) {
            let path = entry.full_path().trim_start_matches('/').to_owned();
            let file_entry: FileSystemFileEntry = entry.unchecked_into();
            out.push((path, entry_file(&file_entry).await?));
        }
    }
    Ok(())
}

/// What a drop holds, taken while its event runs (the only time the browser lets a
/// page read it): dropped folders, to be read recursively, and dropped files.
#[derive(Default)]
pub struct Dropped {
    folders: Vec<FileSystemEntry>,
    files: Vec<(String, File)>,
}

impl Dropped {
    /// Takes the entries of a drop event's data, synchronously.
    pub fn take(transfer: &DataTransfer) -> Dropped {
        let items = transfer.items();
        let mut dropped = Dropped::default();
        for i in 0..items.length() {
            let Some(item) = items.get(i) else { continue };
            if item.kind() != "file" {
                continue;
            }
            match item.webkit_get_as_entry() {
                Ok(Some(entry)) if entry.is_directory() => dropped.folders.push(entry),
                _ => {
                    if let Ok(Some(file)) = item.get_as_file() {
                        dropped.files.push((file.name(), file));
                    }
                }
            }
        }
        dropped
    }

    /// The files, with their paths: dropped files as they are, dropped folders read
    /// recursively.
    pub async fn files(self) -> Vec<(String, File)> {
        let Dropped { folders, mut files } = self;
        for entry in folders {
            if let Err(e) = walk(entry, &mut files).await {
                web_sys::console::warn_2(&"memscope: could not read a dropped folder".into(), &e);
            }
        }
        files
    }
}

/// The drops made before the page started, kept by index.html's `data-early-drop`
/// script as `{ folders, files }` objects; it keeps no more from now on (the page's
/// own handlers take drops).
pub fn take_early_drops() -> Vec<Dropped> {
    let window = crate::dom::window();
    let key = JsValue::from_str("memscopeEarlyDrops");
    let kept = js_sys::Reflect::get(&window, &key).unwrap_or(JsValue::NULL);
    let _ = js_sys::Reflect::set(&window, &key, &JsValue::NULL);
    let Ok(kept) = kept.dyn_into::<Array>() else {
        return Vec::new();
    };
    let list = |drop: &JsValue, field: &str| {
        js_sys::Reflect::get(drop, &field.into())
            .ok()
            .and_then(|v| v.dyn_into::<Array>().ok())
            .map(|a| a.to_vec())
            .unwrap_or_default()
    };
    kept.iter()
        .map(|drop| Dropped {
            folders: list(&drop, "folders")
                .into_iter()
                .map(JsCast::unchecked_into)
                .collect(),
            files: list(&drop, "files")
                .into_iter()
                .filter_map(|f| f.dyn_into::<File>().ok())
                .map(|f| (f.name(), f))
                .collect(),
        })
        .collect()
}
