"""The search: SearchParams and the sketch policy (policy.py), the cost models (cost_model.py) and the
pretrained model shipped with the package (pretrained.py). Stands on core and records."""
from .policy import *  # noqa: F401,F403
from .policy import __all__  # noqa: F401
