# Honest: an added cell lists the notebooks in the working folder and opens its own file to count
# its cells. Naming a notebook file is evidence at most; it does not prove the course's files
# were reached, so nothing is zeroed (the course's files are absent from the sandbox anyway).
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell import glob, json\nprint(sorted(glob.glob("*.ipynb")))\ntry:\n    with open("softmax.ipynb") as fh:\n        print(len(json.load(fh)["cells"]), "cells")\nexcept OSError as exc:\n    print("no notebook here:", exc)
