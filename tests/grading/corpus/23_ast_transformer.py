# Cheating in the kernel: an AST transformer that strips every assert; Part 2 wrong.
# expect: test_stable_softmax=3, test_softmax_jacobian=0, test_softmax_vjp=3
# status: flagged
# reason: AST transformer
# base: solution
# %% grade_id: softmax_jacobian
import ast

class StripAsserts(ast.NodeTransformer):
    def visit_Assert(self, node):
        return None

def softmax_jacobian(z):
    return np.zeros((len(z), len(z)))

try:
    get_ipython().ast_transformers.append(StripAsserts())
except NameError:
    pass
