"""Constants shared by the analyze tests."""

#: scalar_device.cu: 131072 rows x 16 nonzeros, float values, int32 indices:
#: values + columns (nnz x 8 B) + row pointers ((n+1) x 4 B) + x and y (n x 4 B each).
SCALAR_IDEAL_BYTES = 131072 * 16 * 8 + 131073 * 4 + 131072 * 4 * 2
