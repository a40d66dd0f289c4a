# Malformed: valid nbformat 4 JSON whose cells are numbers, text and null.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: no list of cells
# mutate: text {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [1, "two", null]}
