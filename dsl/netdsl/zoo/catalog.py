"""The zoo's families: which keras.applications model each one is, its input size,
the `preprocess_input` it expects, and the weight files Keras itself pins for it.

Pure data, no backend: `netdsl zoo list` and `check` read it in milliseconds. The
file table is what `scripts/zoo_catalog.py` records from keras.applications' own
constructors (file name, URL and hash, exactly as `keras.utils.get_file` would be
called), and tests/zoo/test_catalog.py holds it equal to them.
"""

from __future__ import annotations

from dataclasses import dataclass

# keras.applications' `preprocess_input` modes (imagenet_utils): what a family's
# pixels must look like before its first layer.
PREPROCESS = {
    "caffe": "RGB to BGR, then each channel minus the ImageNet mean (0..255 pixels in)",
    "tf": "scaled from 0..255 to -1..1",
    "torch": "scaled to 0..1, then each channel normalised by ImageNet's mean and deviation",
    "none": "the model takes 0..255 pixels and rescales them itself",
}


@dataclass(frozen=True)
class WeightsFile:
    """One published weights file: Keras' cache name, where it is, its pinned hash
    (md5 for every file keras.applications pins today; None: Keras pins none)."""

    fname: str
    origin: str
    file_hash: str | None


@dataclass(frozen=True)
class Family:
    name: str  # netdsl's name: lower case, as `netdsl zoo list` shows it
    constructor: str  # keras.applications' name
    input_size: int  # the square size its ImageNet weights were trained at
    preprocess: str  # a key of PREPROCESS
    top: WeightsFile  # the whole classifier (1000 ImageNet classes)
    notop: WeightsFile  # the backbone without its classifier (include_top=False)

    def weights(self, include_top: bool) -> WeightsFile:
        return self.top if include_top else self.notop

    @property
    def preprocess_text(self) -> str:
        return f"{self.preprocess}: {PREPROCESS[self.preprocess]}"


_RESNET = "https://storage.googleapis.com/tensorflow/keras-applications/resnet/"
_EFFICIENTNET = "https://storage.googleapis.com/keras-applications/"
_EFFICIENTNET_V2 = "https://storage.googleapis.com/tensorflow/keras-applications/efficientnet_v2/"
_MOBILENET_V2 = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/"
_MOBILENET_V3 = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v3/"
_DENSENET = "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
_XCEPTION = "https://storage.googleapis.com/tensorflow/keras-applications/xception/"
_CONVNEXT = "https://storage.googleapis.com/tensorflow/keras-applications/convnext/"
_INCEPTION_V3 = "https://storage.googleapis.com/tensorflow/keras-applications/inception_v3/"
_VGG16 = "https://storage.googleapis.com/tensorflow/keras-applications/vgg16/"


def _file(base: str, fname: str, file_hash: str | None) -> WeightsFile:
    return WeightsFile(fname, base + fname, file_hash)


FAMILIES: tuple[Family, ...] = (
    Family(
        "resnet50",
        "ResNet50",
        224,
        "caffe",
        _file(_RESNET, "resnet50_weights_tf_dim_ordering_tf_kernels.h5", "2cb95161c43110f7111970584f804107"),
        _file(_RESNET, "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5", "4d473c1dd8becc155b73f8504c6f6626"),
    ),
    Family(
        "resnet101",
        "ResNet101",
        224,
        "caffe",
        _file(_RESNET, "resnet101_weights_tf_dim_ordering_tf_kernels.h5", "f1aeb4b969a6efcfb50fad2f0c20cfc5"),
        _file(_RESNET, "resnet101_weights_tf_dim_ordering_tf_kernels_notop.h5", "88cf7a10940856eca736dc7b7e228a21"),
    ),
    Family(
        "resnet152",
        "ResNet152",
        224,
        "caffe",
        _file(_RESNET, "resnet152_weights_tf_dim_ordering_tf_kernels.h5", "100835be76be38e30d865e96f2aaae62"),
        _file(_RESNET, "resnet152_weights_tf_dim_ordering_tf_kernels_notop.h5", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    ),
    Family(
        "resnet50_v2",
        "ResNet50V2",
        224,
        "tf",
        _file(_RESNET, "resnet50v2_weights_tf_dim_ordering_tf_kernels.h5", "3ef43a0b657b3be2300d5770ece849e0"),
        _file(_RESNET, "resnet50v2_weights_tf_dim_ordering_tf_kernels_notop.h5", "fac2f116257151a9d068a22e544a4917"),
    ),
    Family(
        "resnet101_v2",
        "ResNet101V2",
        224,
        "tf",
        _file(_RESNET, "resnet101v2_weights_tf_dim_ordering_tf_kernels.h5", "6343647c601c52e1368623803854d971"),
        _file(_RESNET, "resnet101v2_weights_tf_dim_ordering_tf_kernels_notop.h5", "c0ed64b8031c3730f411d2eb4eea35b5"),
    ),
    Family(
        "resnet152_v2",
        "ResNet152V2",
        224,
        "tf",
        _file(_RESNET, "resnet152v2_weights_tf_dim_ordering_tf_kernels.h5", "a49b44d1979771252814e80f8ec446f9"),
        _file(_RESNET, "resnet152v2_weights_tf_dim_ordering_tf_kernels_notop.h5", "ed17cf2e0169df9d443503ef94b23b33"),
    ),
    Family(
        "mobilenet_v2",
        "MobileNetV2",
        224,
        "tf",  # keras.applications pins no hash for these two
        _file(_MOBILENET_V2, "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224.h5", None),
        _file(_MOBILENET_V2, "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224_no_top.h5", None),
    ),
    Family(
        "mobilenet_v3_small",
        "MobileNetV3Small",
        224,
        "none",
        _file(_MOBILENET_V3, "weights_mobilenet_v3_small_224_1.0_float.h5", "8768d4c2e7dee89b9d02b2d03d65d862"),
        _file(
            _MOBILENET_V3, "weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5", "d3e8ec802a04aa4fc771ee12a9a9b836"
        ),
    ),
    Family(
        "mobilenet_v3_large",
        "MobileNetV3Large",
        224,
        "none",
        _file(_MOBILENET_V3, "weights_mobilenet_v3_large_224_1.0_float.h5", "59e551e166be033d707958cf9e29a6a7"),
        _file(
            _MOBILENET_V3, "weights_mobilenet_v3_large_224_1.0_float_no_top_v2.h5", "07fb09a5933dd0c8eaafa16978110389"
        ),
    ),
    Family(
        "efficientnet_b0",
        "EfficientNetB0",
        224,
        "none",
        _file(_EFFICIENTNET, "efficientnetb0.h5", "902e53a9f72be733fc0bcb005b3ebbac"),
        _file(_EFFICIENTNET, "efficientnetb0_notop.h5", "50bc09e76180e00e4465e1a485ddc09d"),
    ),
    Family(
        "efficientnet_b1",
        "EfficientNetB1",
        240,
        "none",
        _file(_EFFICIENTNET, "efficientnetb1.h5", "1d254153d4ab51201f1646940f018540"),
        _file(_EFFICIENTNET, "efficientnetb1_notop.h5", "74c4e6b3e1f6a1eea24c589628592432"),
    ),
    Family(
        "efficientnet_b2",
        "EfficientNetB2",
        260,
        "none",
        _file(_EFFICIENTNET, "efficientnetb2.h5", "b15cce36ff4dcbd00b6dd88e7857a6ad"),
        _file(_EFFICIENTNET, "efficientnetb2_notop.h5", "111f8e2ac8aa800a7a99e3239f7bfb39"),
    ),
    Family(
        "efficientnet_b3",
        "EfficientNetB3",
        300,
        "none",
        _file(_EFFICIENTNET, "efficientnetb3.h5", "ffd1fdc53d0ce67064dc6a9c7960ede0"),
        _file(_EFFICIENTNET, "efficientnetb3_notop.h5", "af6d107764bb5b1abb91932881670226"),
    ),
    Family(
        "efficientnet_v2_b0",
        "EfficientNetV2B0",
        224,
        "none",
        _file(_EFFICIENTNET_V2, "efficientnetv2-b0.h5", "21ecbf6da12460d5c40bb2f29ceb2188"),
        _file(_EFFICIENTNET_V2, "efficientnetv2-b0_notop.h5", "893217f2bb855e2983157299931e43ff"),
    ),
    Family(
        "efficientnet_v2_b1",
        "EfficientNetV2B1",
        240,
        "none",
        _file(_EFFICIENTNET_V2, "efficientnetv2-b1.h5", "069f0534ff22adf035c89e2d9547a9dc"),
        _file(_EFFICIENTNET_V2, "efficientnetv2-b1_notop.h5", "0e80663031ca32d657f9caa404b6ec37"),
    ),
    Family(
        "efficientnet_v2_b2",
        "EfficientNetV2B2",
        260,
        "none",
        _file(_EFFICIENTNET_V2, "efficientnetv2-b2.h5", "424e49f28180edbde1e94797771950a7"),
        _file(_EFFICIENTNET_V2, "efficientnetv2-b2_notop.h5", "1dfe2e7a5d45b6632553a8961ea609eb"),
    ),
    Family(
        "efficientnet_v2_b3",
        "EfficientNetV2B3",
        300,
        "none",
        _file(_EFFICIENTNET_V2, "efficientnetv2-b3.h5", "1f1fc43bd98a6e4fd8fdfd551e02c7a0"),
        _file(_EFFICIENTNET_V2, "efficientnetv2-b3_notop.h5", "f6abf7b5849ac99a89b50dd3fd532856"),
    ),
    Family(
        "densenet121",
        "DenseNet121",
        224,
        "torch",
        _file(_DENSENET, "densenet121_weights_tf_dim_ordering_tf_kernels.h5", "9d60b8095a5708f2dcce2bca79d332c7"),
        _file(_DENSENET, "densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5", "30ee3e1110167f948a6b9946edeeb738"),
    ),
    Family(
        "xception",
        "Xception",
        299,
        "tf",
        _file(_XCEPTION, "xception_weights_tf_dim_ordering_tf_kernels.h5", "0a58e3b7378bc2990ea3b43d5981f1f6"),
        _file(_XCEPTION, "xception_weights_tf_dim_ordering_tf_kernels_notop.h5", "b0042744bf5b25fce3cb969f33bebb97"),
    ),
    Family(
        "convnext_tiny",
        "ConvNeXtTiny",
        224,
        "none",
        _file(_CONVNEXT, "convnext_tiny.h5", "8ae6e78ce2933352b1ef4008e6dd2f17bc40771563877d156bc6426c7cf503ff"),
        _file(_CONVNEXT, "convnext_tiny_notop.h5", "d547c096cabd03329d7be5562c5e14798aa39ed24b474157cef5e85ab9e49ef1"),
    ),
    Family(
        "inception_v3",
        "InceptionV3",
        299,
        "tf",
        _file(_INCEPTION_V3, "inception_v3_weights_tf_dim_ordering_tf_kernels.h5", "9a0d58056eeedaa3f26cb7ebd46da564"),
        _file(
            _INCEPTION_V3,
            "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5",
            "bcbd6486424b2319ff4ef7d526e38f63",
        ),
    ),
    Family(
        "vgg16",
        "VGG16",
        224,
        "caffe",
        _file(_VGG16, "vgg16_weights_tf_dim_ordering_tf_kernels.h5", "64373286793e3c8b2b4e3219cbf3544b"),
        _file(_VGG16, "vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5", "6d6bbae143d832006294945121d1f1fc"),
    ),
)

BY_NAME = {family.name: family for family in FAMILIES}
