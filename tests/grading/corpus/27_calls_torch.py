# Calling the reference: Part 3 computes the VJP with torch.autograd (no credit).
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: torch
# base: solution
# %% grade_id: softmax_vjp
import torch

def softmax_vjp(p, g):
    z = torch.log(torch.tensor(p, requires_grad=True))
    out = torch.softmax(z, dim=-1)
    out.backward(torch.tensor(g))
    return z.grad.numpy() / p
