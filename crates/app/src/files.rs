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

/// The files of a drop, with their paths: dropped files as they are, dropped folders
/// read recursively.
pub async fn from_drop(transfer: DataTransfer) -> Vec<(String, File)> {
    let items = transfer.items();
    let mut entries = Vec::new();
    let mut plain = Vec::new();
    // Entries must be taken synchronously, before the drop event's data goes away.
    for i in 0..items.length() {
        let Some(item) = items.get(i) else { continue };
        if item.kind() != "file" {
            continue;
        }
        match item.webkit_get_as_entry() {
            Ok(Some(entry)) if entry.is_directory() => entries.push(entry),
            _ => {
                if let Ok(Some(file)) = item.get_as_file() {
                    plain.push((file.name(), file));
                }
            }
        }
    }
    for entry in entries {
        if let Err(e) = walk(entry, &mut plain).await {
            web_sys::console::warn_2(&"memscope: could not read a dropped folder".into(), &e);
        }
    }
    plain
}
