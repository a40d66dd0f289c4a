# Malformed encoding: a notebook with accented comments written out as Latin-1.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: not UTF-8
# base: solution
# mutate: encode latin-1
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    # vecteur-jacobienne: résultat exact, numériquement stable
    return p * (g - (p * g).sum(axis=-1, keepdims=True))
