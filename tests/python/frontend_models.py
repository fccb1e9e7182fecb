"""Models for the frontend tests, written here (torchvision is not a dependency): a torchvision-style
ResNet-18 (BasicBlock, random weights), a transformer encoder layer (multi-head self-attention with LayerNorm
and GELU), a small CNN with a TopK head, and ONNX models built node by node with onnx.helper."""
import io
import warnings

import torch
from torch import nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, layers=(2, 2, 2, 2), widths=(64, 128, 256, 512), num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages, cin = [], widths[0]
        for i, (n, w) in enumerate(zip(layers, widths)):
            blocks = [BasicBlock(cin, w, 1 if i == 0 else 2)] + [BasicBlock(w, w) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
            cin = w
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[-1], num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes=1000, seed=0):
    torch.manual_seed(seed)
    model = ResNet(num_classes=num_classes)
    with torch.no_grad():  # running statistics that are not the identity, so batch_norm is really tested
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return model.eval()


class EncoderLayer(nn.Module):
    """Pre-norm transformer layer: multi-head self-attention and a GELU MLP, each with a residual."""

    def __init__(self, dim=32, heads=4, hidden=64):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)
        self.drop = nn.Dropout(0.1)

    def _heads(self, x, b, t, c):
        return x.view(b, t, self.heads, c // self.heads).transpose(1, 2)

    def forward(self, x):
        b, t, c = x.shape
        h = self.ln1(x)
        q, k, v = (self._heads(f(h), b, t, c) for f in (self.q, self.k, self.v))
        att = torch.softmax(q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.drop(self.out(y))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


def encoder_layer(seed=0):
    torch.manual_seed(seed)
    return EncoderLayer().eval()


class TopKHead(nn.Module):
    """A small CNN whose scores go through TopK, which the graph IR does not have."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        y = torch.flatten(torch.relu(self.conv(x)), 1)
        return torch.topk(self.fc(y), 3).values


def to_onnx(model, inputs, opset=17, dynamic_axes=None, fold=True):
    """The model exported by torch's TorchScript-based exporter (needs no onnxscript), as a ModelProto;
    fold=False keeps BatchNormalization nodes (the exporter folds them into the convolutions otherwise)."""
    import onnx
    names = [f"input{i}" for i in range(len(inputs))]
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(inputs), f, dynamo=False, opset_version=opset, input_names=names,
                          output_names=["output"], dynamic_axes=dynamic_axes, do_constant_folding=fold)
    return onnx.load_from_string(f.getvalue())
