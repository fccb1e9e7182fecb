"""Bad arguments to the operator library raise ValueError / TypeError naming the problem."""
import pytest

from autosched import ops, te


def ph(shape, dtype="float32", name="x"):
    return te.placeholder(shape, dtype=dtype, name=name)


def test_broadcast_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5,\)"):
        ops.add(ph((3, 4), name="a"), ph((5,), name="b"))


def test_binary_dtype_mismatch():
    with pytest.raises(TypeError, match="float32.*int32"):
        ops.multiply(ph((3,)), ph((3,), "int32", "i"))


def test_float_scalar_with_int_tensor():
    with pytest.raises(TypeError, match="cast"):
        ops.add(ph((3,), "int32"), 0.5)


def test_binary_needs_a_tensor():
    with pytest.raises(TypeError, match="te.Tensor"):
        ops.add(1, 2)


@pytest.mark.parametrize("name", ["exp", "sigmoid", "tanh", "gelu", "softmax", "log_softmax", "mean"])
def test_float_only_ops_reject_int(name):
    with pytest.raises(TypeError, match="floating-point"):
        getattr(ops, name)(ph((3,), "int32", "ints"))


def test_conv_channel_mismatch():
    with pytest.raises(ValueError, match="channel mismatch.*3 input channels.*expects 4"):
        ops.conv2d_nhwc(ph((1, 5, 5, 3)), ph((3, 3, 4, 8), name="k"), 1, 1)
    with pytest.raises(ValueError, match="channel mismatch"):
        ops.conv2d_nchw(ph((1, 3, 5, 5)), ph((8, 2, 3, 3), name="k"), 1, 1)
    with pytest.raises(ValueError, match="channel mismatch"):
        ops.depthwise_conv2d_nchw(ph((1, 3, 5, 5)), ph((4, 1, 3, 3), name="k"), 1, 1)


def test_groups_not_dividing_channels():
    with pytest.raises(ValueError, match="groups=2 does not divide the 3 input channels"):
        ops.conv2d_nchw(ph((1, 3, 5, 5)), ph((4, 1, 3, 3), name="k"), 1, 1, groups=2)
    with pytest.raises(ValueError, match="groups=2 does not divide the 5 output channels"):
        ops.conv2d_nhwc(ph((1, 5, 5, 4)), ph((3, 3, 2, 5), name="k"), 1, 1, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive int"):
        ops.conv2d_nhwc(ph((1, 5, 5, 4)), ph((3, 3, 4, 4), name="k"), 1, 1, groups=0)


def test_conv_bad_geometry():
    with pytest.raises(ValueError, match="does not fit"):
        ops.conv2d_nchw(ph((1, 1, 2, 2)), ph((1, 1, 3, 3), name="k"), 1, 0)
    with pytest.raises(ValueError, match="rank 4"):
        ops.conv2d_nchw(ph((1, 2, 2)), ph((1, 1, 3, 3), name="k"), 1, 0)
    with pytest.raises(ValueError, match="padding"):
        ops.conv2d_nchw(ph((1, 1, 5, 5)), ph((1, 1, 3, 3), name="k"), 1, (1, 2, 3))
    with pytest.raises(ValueError, match="padding"):
        ops.conv2d_nchw(ph((1, 1, 5, 5)), ph((1, 1, 3, 3), name="k"), 1, "FULL")
    with pytest.raises(ValueError, match="stride"):
        ops.conv2d_nchw(ph((1, 1, 5, 5)), ph((1, 1, 3, 3), name="k"), 0, 1)
    with pytest.raises(TypeError, match="dtypes differ"):
        ops.conv2d_nchw(ph((1, 1, 5, 5)), ph((1, 1, 3, 3), "float16", "k"), 1, 1)


def test_spatial_pack_bad_tile():
    with pytest.raises(ValueError, match="tile"):
        ops.conv2d_nchw_spatial_pack(ph((1, 1, 5, 5)), ph((2, 1, 3, 3), name="k"), 1, 1, tile=(2, 0, 2))


def test_matmul_shape_errors():
    with pytest.raises(ValueError, match="inner dimensions"):
        ops.matmul(ph((3, 4)), ph((5, 6), name="y"))
    with pytest.raises(ValueError, match="reduction dimensions"):
        ops.dense(ph((3, 4)), ph((5, 6), name="w"))
    with pytest.raises(ValueError, match="batch sizes"):
        ops.batch_matmul(ph((2, 3, 4)), ph((3, 5, 4), name="y"))
    with pytest.raises(ValueError, match="bias"):
        ops.dense(ph((3, 4)), ph((5, 4), name="w"), ph((4,), name="b"))


@pytest.mark.parametrize("call", [
    lambda x: ops.sum(x, axis=3),
    lambda x: ops.softmax(x, axis=-4),
    lambda x: ops.transpose(x, (0, 0, 1)),
    lambda x: ops.concatenate([x], axis=5),
    lambda x: ops.bias_add(x, ph((3,), name="b"), axis=3),
    lambda x: ops.mean(x, axis=(1, 1)),
])
def test_bad_axis(call):
    with pytest.raises(ValueError, match="axis|axes|permutation"):
        call(ph((2, 3, 4)))


def test_injective_errors():
    x = ph((2, 3))
    with pytest.raises(ValueError, match=r"cannot reshape \(2, 3\)"):
        ops.reshape(x, (4, 2))
    with pytest.raises(ValueError, match="differ outside axis"):
        ops.concatenate([x, ph((3, 3), name="y")], axis=1)
    with pytest.raises(TypeError, match="dtypes differ"):
        ops.concatenate([x, ph((2, 3), "int32", "y")])
    with pytest.raises(ValueError, match="pad widths"):
        ops.pad(x, (1,))
    with pytest.raises(TypeError, match="integer dtype"):
        ops.take(x, ph((2,), name="idx"))
    with pytest.raises(ValueError, match="mode"):
        ops.take(x, ph((2,), "int32", "idx"), mode="fast")
    with pytest.raises(ValueError, match="empty"):
        ops.strided_slice(x, (1,), (1,))
    with pytest.raises(ValueError, match="stride must not be zero"):
        ops.strided_slice(x, (0,), (1,), (0,))


def test_pool_errors():
    with pytest.raises(ValueError, match="layout"):
        ops.max_pool2d(ph((1, 1, 4, 4)), 2, 2, 0, layout="HWCN")
    with pytest.raises(ValueError, match="smaller than the pooling window"):
        ops.avg_pool2d(ph((1, 1, 4, 4)), 2, 1, 2)


def test_layer_norm_param_shape():
    with pytest.raises(ValueError, match=r"gamma 'g' has shape \(3,\), expected \(4,\)"):
        ops.layer_norm(ph((2, 4)), ph((3,), name="g"), ph((4,), name="b"))


def test_clip_bounds():
    with pytest.raises(ValueError, match="a_min"):
        ops.clip(ph((3,)), 2, 1)


def test_non_tensor_input():
    with pytest.raises(TypeError, match="te.Tensor"):
        ops.relu([1, 2, 3])
