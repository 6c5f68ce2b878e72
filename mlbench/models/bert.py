"""BERT pretraining models from Model Garden (`official.nlp.modeling`).

BertEncoderV2 + the masked-LM head tied to the word embeddings
(BertPretrainerV2) + a next-sentence ClassificationHead on the [CLS] token,
which is the model MLPerf and Google's BERT pretraining use.
"""
import tf_keras as keras
from official.nlp.modeling import layers as nlp_layers
from official.nlp.modeling import models as nlp_models
from official.nlp.modeling import networks

from mlbench.precision import policy_scope

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


def pretrainer(size="base", num_classes=None, **encoder_overrides):
    """BERT pretraining model: outputs 'mlm_logits' and 'next_sentence' logits (float32).

    `num_classes` is accepted for the registry's uniform signature and ignored.
    """
    del num_classes
    if size not in BERT_SIZES:
        raise ValueError(f"BERT `size` ({size!r}) must be one of {list(BERT_SIZES)}.")
    num_layers, hidden = BERT_SIZES[size]
    encoder_overrides.setdefault("num_layers", num_layers)
    encoder_overrides.setdefault("hidden_size", hidden)
    net = encoder(**encoder_overrides)
    net(net.inputs)  # builds the embedding table the masked-LM head is tied to
    # Both heads run in float32: their logits must be float32 under mixed
    # precision, and the tied word-embedding table is a float32 variable that
    # Keras never autocasts (a float16 head fails in MatMul).
    masked_lm = nlp_layers.MaskedLM(embedding_table=net.get_embedding_table(),
                                    activation=keras.activations.gelu,
                                    initializer=keras.initializers.TruncatedNormal(stddev=0.02),
                                    name="cls/predictions", dtype="float32")
    with policy_scope("float32"):  # its sub-layers read the global policy
        nsp = nlp_layers.ClassificationHead(inner_dim=net.get_config()["hidden_size"],
                                            num_classes=2, name="next_sentence")
    return nlp_models.BertPretrainerV2(encoder_network=net, classification_heads=[nsp],
                                       customized_masked_lm=masked_lm, name=f"bert_{size}")
