# The student's written answer on pre-norm and post-norm is in its cell, but the cell became a code cell (Y in command mode), so running it raises a SyntaxError; it is still the student's written answer, and no autograded part may lose a point over it.
# expect: test_layer_norm=2, test_feed_forward=1, test_encoder_block=4, test_loss_and_accuracy=2
# status: graded
# kind: honest
# assignment: 11_capstone
# base: solution
# mutate: retype pre_norm_answer code
# %% grade_id: pre_norm_answer
In a pre-norm block the residual stream is x -> x + f(LN(x)): the stream itself is never normalised,
so with the sublayers near zero the whole stack is close to the identity and the gradient reaches the
first block through the "+ x" path undamped. In post-norm every block ends with LN(x + f(x)), so the
stream is re-centred and rescaled in every block and the gradient to the early blocks passes through
every layer norm's Jacobian; deep post-norm stacks need learning-rate warm-up to train at all.
