//! Gathering files from drops (files and folders, read recursively) and pickers.

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

/// The files of a `FileList` (from an `<input type=file>`).
pub fn from_list(list: &FileList, from_folder: bool) -> Vec<File> {
    (0..list.length())
        .filter_map(|i| list.get(i))
        .filter(|f| !from_folder || looks_like_snapshot(&f.name()))
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

/// Every snapshot-looking file under a folder entry, recursively.
async fn walk(root: FileSystemEntry, out: &mut Vec<File>) -> Result<(), JsValue> {
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
            let file_entry: FileSystemFileEntry = entry.unchecked_into();
            out.push(entry_file(&file_entry).await?);
        }
    }
    Ok(())
}

/// The files of a drop: dropped files as they are, dropped folders read recursively.
pub async fn from_drop(transfer: DataTransfer) -> Vec<File> {
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
                    plain.push(file);
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
