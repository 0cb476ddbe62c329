"""The PyTorch reference for zibert: BERT as Hugging Face's transformers defines it.

One model serves the parity fixtures (tests/reference/torch_reference.py), the
benchmarks (bench/torch_bench.py), the ONNX export (scripts/export_onnx.py) and
checks of imported checkpoints. Its modules carry Hugging Face's names, so its
state_dict is that of BertForSequenceClassification (head "classify"),
BertForMaskedLM (head "mlm") or BertModel (head None), and a checkpoint of
theirs loads with load_state_dict. The semantics are theirs:

  embeddings  word + position + token type (row 0 unless token_type_ids say),
              LayerNorm(eps), dropout
  layer       self-attention (scores / sqrt(D), padded keys masked, softmax,
              dropout on the weights), output dense, dropout, LayerNorm of the
              sum with the input; intermediate dense, GELU (erf), output dense,
              dropout, LayerNorm of the sum
  pooler      tanh(dense(h[:, 0]))
  classify    classifier(dropout(pooled))
  mlm         transform dense, GELU, LayerNorm, decoder (tied to the word
              embeddings unless tie_decoder=False) plus cls.predictions.bias

A padded key gets -inf where Hugging Face adds the dtype's lowest value: the
same weights whenever a row has one real key ([CLS] always is one).

config uses Hugging Face's BertConfig keys (see hf_config for zibert's).
"""
import math

import torch
import torch.nn.functional as Fn


def hf_config(vocab_size, max_len, dim, heads, ffn, layers, labels=2, layer_norm_eps=1e-12, type_vocab_size=2,
              dropout=0.1, attention_dropout=0.1):
    """BertConfig's fields from zibert's names (ModelConfig: dim, heads, ffn, layers, max_len)."""
    return dict(vocab_size=vocab_size, max_position_embeddings=max_len, hidden_size=dim, num_attention_heads=heads,
                intermediate_size=ffn, num_hidden_layers=layers, num_labels=labels, layer_norm_eps=layer_norm_eps,
                type_vocab_size=type_vocab_size, hidden_dropout_prob=dropout,
                attention_probs_dropout_prob=attention_dropout, hidden_act="gelu")


class Embeddings(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.word_embeddings = torch.nn.Embedding(c["vocab_size"], h, padding_idx=c.get("pad_token_id", 0))
        self.position_embeddings = torch.nn.Embedding(c["max_position_embeddings"], h)
        if c.get("type_vocab_size", 2):
            self.token_type_embeddings = torch.nn.Embedding(c["type_vocab_size"], h)
        self.LayerNorm = torch.nn.LayerNorm(h, eps=c["layer_norm_eps"])
        self.dropout = torch.nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, ids, token_type_ids=None):  # (B, T) -> (B, T, C)
        x = self.word_embeddings(ids) + self.position_embeddings.weight[:ids.shape[1]]
        if hasattr(self, "token_type_embeddings"):
            types = torch.zeros_like(ids) if token_type_ids is None else token_type_ids
            x = x + self.token_type_embeddings(types)
        return self.dropout(self.LayerNorm(x))


class SelfAttention(torch.nn.Module):
    def __init__(self, c, fused_qkv):
        super().__init__()
        h = c["hidden_size"]
        self.heads, self.fused_qkv = c["num_attention_heads"], fused_qkv
        self.query, self.key, self.value = (torch.nn.Linear(h, h) for _ in range(3))
        self.dropout = torch.nn.Dropout(c["attention_probs_dropout_prob"])

    def forward(self, x, key_padding):  # x (B, T, C), key_padding (B, 1, 1, T) True at padded keys
        B, T, C = x.shape
        H, D = self.heads, C // self.heads
        if self.fused_qkv:  # one (3C, C) product: PyTorch's fastest form of the same arithmetic
            w = torch.cat([self.query.weight, self.key.weight, self.value.weight])
            b = torch.cat([self.query.bias, self.key.bias, self.value.bias])
            q, k, v = Fn.linear(x, w, b).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)  # 3 × (B, H, T, D)
        else:
            q, k, v = (m(x).view(B, T, H, D).transpose(1, 2) for m in (self.query, self.key, self.value))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)  # (B, H, T, T)
        p = self.dropout(torch.softmax(s.masked_fill(key_padding, float("-inf")), dim=-1))
        return (p @ v).transpose(1, 2).reshape(B, T, C)


class DenseNorm(torch.nn.Module):
    """dense, dropout, LayerNorm(dense(x) + residual): BertSelfOutput and BertOutput."""

    def __init__(self, c, inputs):
        super().__init__()
        self.dense = torch.nn.Linear(inputs, c["hidden_size"])
        self.LayerNorm = torch.nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = torch.nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(torch.nn.Module):
    def __init__(self, c, fused_qkv):
        super().__init__()
        setattr(self, "self", SelfAttention(c, fused_qkv))  # Hugging Face's name: attention.self.query …
        self.output = DenseNorm(c, c["hidden_size"])

    def forward(self, x, key_padding):
        return self.output(getattr(self, "self")(x, key_padding), x)


class Intermediate(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = torch.nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return Fn.gelu(self.dense(x))  # the exact (erf) form: hidden_act "gelu"


class Layer(torch.nn.Module):
    def __init__(self, c, fused_qkv):
        super().__init__()
        self.attention = Attention(c, fused_qkv)
        self.intermediate = Intermediate(c)
        self.output = DenseNorm(c, c["intermediate_size"])

    def forward(self, x, key_padding):
        x = self.attention(x, key_padding)
        return self.output(self.intermediate(x), x)


class Encoder(torch.nn.Module):
    def __init__(self, c, fused_qkv):
        super().__init__()
        self.layer = torch.nn.ModuleList(Layer(c, fused_qkv) for _ in range(c["num_hidden_layers"]))

    def forward(self, x, key_padding):
        for layer in self.layer:
            x = layer(x, key_padding)
        return x


class Pooler(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = torch.nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, x):  # (B, T, C) -> (B, C)
        return torch.tanh(self.dense(x[:, 0]))


class BertModel(torch.nn.Module):
    def __init__(self, c, pooler=True, fused_qkv=False):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c, fused_qkv)
        if pooler:
            self.pooler = Pooler(c)

    def forward(self, ids, attention_mask=None, token_type_ids=None):
        """The last layer's states (B, T, C); attention_mask (B, T) is 1 at real tokens (default: ids != 0)."""
        mask = (ids != 0) if attention_mask is None else attention_mask.bool()
        return self.encoder(self.embeddings(ids, token_type_ids), ~mask[:, None, None, :])


class PredictionHeadTransform(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = torch.nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = torch.nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x):
        return self.LayerNorm(Fn.gelu(self.dense(x)))


class LMPredictionHead(torch.nn.Module):
    def __init__(self, c, tie_decoder):
        super().__init__()
        self.transform = PredictionHeadTransform(c)
        self.bias = torch.nn.Parameter(torch.zeros(c["vocab_size"]))
        if not tie_decoder:
            self.decoder = torch.nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)


class MaskedLMHeads(torch.nn.Module):
    def __init__(self, c, tie_decoder):
        super().__init__()
        self.predictions = LMPredictionHead(c, tie_decoder)


class Bert(torch.nn.Module):
    """BertForSequenceClassification (head "classify"), BertForMaskedLM ("mlm") or BertModel (None)."""

    def __init__(self, config, head="classify", pooler=None, tie_decoder=True, fused_qkv=False):
        super().__init__()
        self.config, self.head = dict(config), head
        self.bert = BertModel(self.config, pooler=(head == "classify") if pooler is None else pooler,
                              fused_qkv=fused_qkv)
        if head == "classify":
            self.dropout = torch.nn.Dropout(self.config["hidden_dropout_prob"])
            self.classifier = torch.nn.Linear(self.config["hidden_size"], self.config["num_labels"])
        elif head == "mlm":
            self.cls = MaskedLMHeads(self.config, tie_decoder)

    def forward(self, ids, attention_mask=None, token_type_ids=None):
        """classify: the logits (B, labels); mlm: the logits of every position (B, T, V); None: the states."""
        x = self.bert(ids, attention_mask, token_type_ids)
        if self.head == "classify":
            return self.classifier(self.dropout(self.bert.pooler(x)))
        if self.head == "mlm":
            return self.decode(x)
        return x

    def pooled(self, ids, attention_mask=None, token_type_ids=None):
        return self.bert.pooler(self.bert(ids, attention_mask, token_type_ids))

    def decode(self, x):
        """The masked-LM head's logits for states x (..., C) -> (..., V)."""
        p = self.cls.predictions
        w = p.decoder.weight if hasattr(p, "decoder") else self.bert.embeddings.word_embeddings.weight
        return p.transform(x) @ w.T + p.bias

    def mlm_logits(self, ids, positions, attention_mask=None, token_type_ids=None):
        """The head on the chosen rows b*T + t only, (M, V), as zibert computes it."""
        x = self.bert(ids, attention_mask, token_type_ids)
        return self.decode(x.reshape(-1, x.shape[-1])[positions])

    def load_hf_state_dict(self, state):
        """A checkpoint's tensors by Hugging Face's names (with or without `bert.`, LayerNorm gamma/beta),
        leaving out what this model has no place for (position_ids, the next-sentence head)."""
        own = self.state_dict()
        fixed = {}
        for name, t in state.items():
            n = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
            if not n.startswith(("bert.", "cls.", "classifier.")):
                n = "bert." + n
            if n in own:
                fixed[n] = t.to(own[n].dtype)
        missing = [n for n in own if n not in fixed]
        if missing:
            raise KeyError(f"checkpoint lacks {missing[:3]}")
        self.load_state_dict(fixed)


def init_weights(model, std=0.02):
    """Hugging Face's initialisation: normal(0, std) matrices and embeddings (the padding row
    zero), zero biases, LayerNorm ones and zeros."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                m.weight.normal_(0.0, std)
            if isinstance(m, torch.nn.Linear) and m.bias is not None:
                m.bias.zero_()
            if isinstance(m, torch.nn.Embedding) and m.padding_idx is not None:
                m.weight[m.padding_idx].zero_()
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()
            if isinstance(m, LMPredictionHead):
                m.bias.zero_()
    return model
