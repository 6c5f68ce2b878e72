"""Text → WordPiece vocabulary → MLPerf/Google-format BERT pretraining TFRecords.

The vocabulary comes from tensorflow-text's `bert_vocab_from_dataset`; the
instances (15 % masking with 80/10/10 replacement, `max_predictions`
per sequence, next-sentence pairs with random negatives) and the record
layout (`input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`,
`masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`) come from Model
Garden's `official.nlp.data.create_pretraining_data`, the script Google's and
MLPerf's BERT data is made with. Its module defines absl flags at import; we
only call its functions, so no flag is ever parsed.
"""
import os
import random
import re

import tensorflow as tf

RESERVED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def pydoc_documents():
    """The standard library's pydoc topics (~65K words): one document per topic."""
    from pydoc_data.topics import topics
    return [topics[name] for name in sorted(topics)]


def split_sentences(document):
    """Sentences of a document, one per line, as create_pretraining_data expects."""
    text = re.sub(r"\s+", " ", document).strip()
    return [s for s in re.split(r"(?<=[.!?:])\s+", text) if len(s.split()) >= 2]


def write_text_file(documents, path):
    """One sentence per line, a blank line between documents."""
    with open(path, "w") as f:
        for doc in documents:
            sentences = split_sentences(doc)
            if sentences:
                f.write("\n".join(sentences) + "\n\n")
    return path


def build_vocab(documents, vocab_size, path):
    """A WordPiece vocabulary (lower-cased) learnt with tensorflow-text; written one token per line."""
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as bvfd
    dataset = tf.data.Dataset.from_tensor_slices(
        [s for doc in documents for s in split_sentences(doc)]).batch(256)
    vocab = bvfd.bert_vocab_from_dataset(
        dataset, vocab_size=vocab_size, reserved_tokens=RESERVED,
        bert_tokenizer_params={"lower_case": True}, learn_params={})
    with open(path, "w") as f:
        f.write("\n".join(vocab) + "\n")
    return path


def write_bert_pretraining(output_dir, documents=None, vocab_size=2000, seq_length=128,
                           max_predictions=20, masked_lm_prob=0.15, dupe_factor=5,
                           short_seq_prob=0.1, eval_fraction=0.1, seed=12345, num_shards=2):
    """Writes vocab.txt, train-*.tfrecord and eval-*.tfrecord shards to `output_dir`.

    Args:
      documents: texts (default: `pydoc_documents()`); the last `eval_fraction` are held out.
      Others: as in create_pretraining_data.

    Returns:
      {'vocab': path, 'train': [paths], 'eval': [paths], 'counts': {split: n}}.
    """
    from official.nlp.data import create_pretraining_data as cpd
    from official.nlp.tools import tokenization
    documents = documents if documents is not None else pydoc_documents()
    os.makedirs(output_dir, exist_ok=True)
    vocab = build_vocab(documents, vocab_size, os.path.join(output_dir, "vocab.txt"))
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab, do_lower_case=True)
    n_eval = max(1, int(len(documents) * eval_fraction))
    splits = {"train": documents[:-n_eval], "eval": documents[-n_eval:]}
    out = {"vocab": vocab, "counts": {}}
    for split, docs in splits.items():
        text = write_text_file(docs, os.path.join(output_dir, f"{split}.txt"))
        instances = cpd.create_training_instances(
            [text], tokenizer, cpd.get_processor_text_fn(False, True), seq_length,
            dupe_factor if split == "train" else 1, short_seq_prob, masked_lm_prob,
            max_predictions, random.Random(seed))
        shards = num_shards if split == "train" else 1
        paths = [os.path.join(output_dir, f"{split}-{i:05d}-of-{shards:05d}.tfrecord")
                 for i in range(shards)]
        cpd.write_instance_to_example_files(instances, tokenizer, seq_length, max_predictions,
                                            paths, gzip_compress=False,
                                            use_v2_feature_names=False)
        out[split], out["counts"][split] = paths, len(instances)
        with open(os.path.join(output_dir, f"{split}.count"), "w") as f:
            f.write(str(len(instances)))
    return out
