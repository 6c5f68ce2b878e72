"""Peer reference: BERT pretraining (masked LM + next sentence) throughput in PyTorch on the CPU.

BERT-base or -large encoder (post-LayerNorm, GELU, learned positions), a masked-LM
head tied to the word embeddings and evaluated on the masked positions only
(20 of 128 tokens, as in BERT/MLPerf records), a next-sentence head on [CLS];
AdamW; optional bf16 autocast. Synthetic token ids.

Setup: python3 -m venv .peer-venv && .peer-venv/bin/pip install torch==2.13.0 numpy
Run:   .peer-venv/bin/python benchmarks/peers/torch_bert.py bf16 16 5 [base|large]
Prints one line:  PEER torch-bert-<size> <fp32|bf16> bs=<B>: <X> sequences/sec
"""
import sys, time, torch, torch.nn as nn
torch.manual_seed(0)
SIZES = {"base": (12, 768), "large": (24, 1024)}
V, S, P = 30522, 128, 20
class Bert(nn.Module):
    def __init__(s, size="base"):
        super().__init__(); L, H = SIZES[size]; s.H = H
        s.tok = nn.Embedding(V, H); s.pos = nn.Embedding(512, H); s.typ = nn.Embedding(2, H)
        s.ln = nn.LayerNorm(H); s.drop = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(H, H // 64, 4 * H, 0.1, activation="gelu", batch_first=True)
        s.enc = nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
        s.mlm = nn.Sequential(nn.Linear(H, H), nn.GELU(), nn.LayerNorm(H)); s.mlm_bias = nn.Parameter(torch.zeros(V))
        s.pool = nn.Linear(H, H); s.nsp = nn.Linear(H, 2)
    def forward(s, ids, types, mask, pos):
        x = s.drop(s.ln(s.tok(ids) + s.pos.weight[:S] + s.typ(types)))
        x = s.enc(x, src_key_padding_mask=~mask)
        picked = torch.gather(x, 1, pos[..., None].expand(-1, -1, s.H))
        mlm = s.mlm(picked) @ s.tok.weight.t() + s.mlm_bias
        nsp = s.nsp(torch.tanh(s.pool(x[:, 0])))
        return mlm, nsp
if __name__ == "__main__":  # benchmarks/peers/torch_inference.py imports Bert
    mode, bs, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    size = sys.argv[4] if len(sys.argv) > 4 else "base"
    m = Bert(size); opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    ids = torch.randint(0, V, (bs, S)); types = torch.zeros(bs, S, dtype=torch.long)
    mask = torch.ones(bs, S, dtype=torch.bool); pos = torch.randint(0, S, (bs, P))
    mlm_y = torch.randint(0, V, (bs, P)); nsp_y = torch.randint(0, 2, (bs,))
    ce = nn.CrossEntropyLoss()
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=(mode == "bf16")):
            mlm, nsp = m(ids, types, mask, pos)
            loss = ce(mlm.reshape(-1, V).float(), mlm_y.reshape(-1)) + ce(nsp.float(), nsp_y)
        loss.backward(); opt.step()
    for _ in range(2): step()
    t = time.perf_counter()
    for _ in range(steps): step()
    dt = time.perf_counter() - t
    print(f"PEER torch-bert-{size} {mode} bs={bs}: {bs*steps/dt:.2f} sequences/sec")
