# Every answer raises or returns the wrong kind of thing: no points, and the notebook still grades.
# expect: test_layer_norm=0, test_feed_forward=0, test_encoder_block=0, test_loss_and_accuracy=0
# %% grade_id: layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    raise ValueError("not done yet")
# %% grade_id: feed_forward
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: encoder_block
def encoder_block(x, params, H, mask=None):
    return None
# %% grade_id: loss_and_accuracy
def loss_and_accuracy(logits, labels):
    return "low", "high"
