# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    arr = np.asarray(x, dtype=np.float64)
    n = arr.shape[-1]
    p = np.asarray(positions, dtype=np.float64)
    evens = np.moveaxis(arr[..., 0::2], -1, 0)
    odds = np.moveaxis(arr[..., 1::2], -1, 0)
    columns = [col
               for j, (u, w) in enumerate(zip(evens, odds))
               for col in (u * np.cos(p * base ** (-2.0 * j / n)) - w * np.sin(p * base ** (-2.0 * j / n)),
                           u * np.sin(p * base ** (-2.0 * j / n)) + w * np.cos(p * base ** (-2.0 * j / n)))]
    return np.stack(columns, axis=-1)
