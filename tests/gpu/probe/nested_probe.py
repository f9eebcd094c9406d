# Probe: a capture started while another capture is active.
import sys

import torch

variant = sys.argv[1]
x = torch.randn(4096, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        y = x * 2
torch.cuda.current_stream().wait_stream(s)
g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g1):
        y = x * 2
        if variant == "with":
            with torch.cuda.graph(g2):
                z = x * 3
        elif variant == "begin":
            g2.capture_begin()
            z = x * 3
            g2.capture_end()
        elif variant == "mgc":
            lin = torch.nn.Linear(8, 8).cuda()
            torch.cuda.make_graphed_callables(lin, (torch.randn(2, 8, device="cuda"),))
    g1.replay()
    torch.cuda.synchronize()
    print(variant, "OK")
except Exception as e:
    print(variant, "FAIL", type(e).__name__, "|", " / ".join(str(e).splitlines()[:2])[:300])
