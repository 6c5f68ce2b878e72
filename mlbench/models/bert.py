"""BERT pretraining models from Model Garden (`official.nlp.modeling`).

BertEncoderV2 + the masked-LM head tied to the word embeddings
(BertPretrainerV2) + a next-sentence ClassificationHead on the [CLS] token,
which is the model MLPerf and Google's BERT pretraining use.
"""
import tensorflow as tf
import tf_keras as keras
from official.nlp.modeling import layers as nlp_layers
from official.nlp.modeling import models as nlp_models
from official.nlp.modeling import networks

from mlbench.models.precision import policy_scope

# name: (layers, hidden) — the standard sizes (Turc et al. 2019; Devlin et al. 2019).
BERT_SIZES = {
    "tiny": (2, 128), "mini": (4, 256), "small": (4, 512),
    "medium": (8, 512), "base": (12, 768), "large": (24, 1024),
}


def encoder(num_layers, hidden_size, num_attention_heads=None, vocab_size=30522,
            max_sequence_length=512, type_vocab_size=2, dropout=0.1):
    """A BertEncoderV2; heads default to hidden/64 and the inner size to 4·hidden."""
    heads = num_attention_heads or max(1, hidden_size // 64)
    if hidden_size % heads:
        raise ValueError(f"`hidden_size` ({hidden_size}) must be divisible by "
                         f"`num_attention_heads` ({heads}).")
    return networks.BertEncoderV2(
        vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
        num_attention_heads=heads, max_sequence_length=max_sequence_length,
        type_vocab_size=type_vocab_size, inner_dim=4 * hidden_size,
        output_dropout=dropout, attention_dropout=dropout)


class ComputeDtypeMaskedLM(nlp_layers.MaskedLM):
    """Model Garden's masked-LM head, run in the layer's compute dtype (bf16/fp16 under
    mixed precision) with float32 logits out.

    The tied word-embedding table is cast to the compute dtype inside the head (so its
    30,522 × hidden matmuls and their gradients run in bf16), the bias likewise; the
    logits are cast to float32 for a float32 softmax cross-entropy.
    """

    def call(self, sequence_data, masked_positions):
        hidden = self.layer_norm(self.dense(self._gather_indexes(sequence_data,
                                                                 masked_positions)))
        table = tf.cast(self.embedding_table, hidden.dtype)
        logits = tf.nn.bias_add(tf.matmul(hidden, table, transpose_b=True),
                                tf.cast(self.bias, hidden.dtype))
        shape = tf.shape(masked_positions)
        logits = tf.reshape(tf.cast(logits, tf.float32), [shape[0], shape[1], self._vocab_size])
        return logits if self._output_type == "logits" else tf.nn.log_softmax(logits)


def pretrainer(size="base", num_classes=None, head_dtype="compute", **encoder_overrides):
    """BERT pretraining model: outputs 'mlm_logits' and 'next_sentence' logits (float32).

    Args:
      size: one of BERT_SIZES.
      num_classes: accepted for the registry's uniform signature and ignored.
      head_dtype: 'compute' runs the masked-LM head in the policy's compute dtype (float32
        logits out); 'float32' runs it in float32 (Model Garden's layer as is).
      **encoder_overrides: BertEncoderV2 arguments.
    """
    if head_dtype not in ("compute", "float32"):
        raise ValueError(f"`head_dtype` ({head_dtype!r}) must be 'compute' or 'float32'.")
    del num_classes
    if size not in BERT_SIZES:
        raise ValueError(f"BERT `size` ({size!r}) must be one of {list(BERT_SIZES)}.")
    num_layers, hidden = BERT_SIZES[size]
    encoder_overrides.setdefault("num_layers", num_layers)
    encoder_overrides.setdefault("hidden_size", hidden)
    net = encoder(**encoder_overrides)
    net(net.inputs)  # builds the embedding table the masked-LM head is tied to
    # The logits are float32 either way. Model Garden's MaskedLM multiplies by the tied
    # table as stored (float32), so it must run in float32; ComputeDtypeMaskedLM casts
    # the table itself and runs in the compute dtype.
    head = ComputeDtypeMaskedLM if head_dtype == "compute" else nlp_layers.MaskedLM
    masked_lm = head(embedding_table=net.get_embedding_table(),
                     activation=keras.activations.gelu,
                     initializer=keras.initializers.TruncatedNormal(stddev=0.02),
                     name="cls/predictions", dtype=None if head_dtype == "compute" else "float32")
    with policy_scope("float32"):  # its sub-layers read the global policy
        nsp = nlp_layers.ClassificationHead(inner_dim=net.get_config()["hidden_size"],
                                            num_classes=2, name="next_sentence")
    return nlp_models.BertPretrainerV2(encoder_network=net, classification_heads=[nsp],
                                       customized_masked_lm=masked_lm, name=f"bert_{size}")
