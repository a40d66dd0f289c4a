# Malformed: "nbformat" is the string "4", not the number (a hand-edited file).
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: nbformat '4' is not supported
# mutate: text {"nbformat": "4", "nbformat_minor": 5, "metadata": {}, "cells": []}
