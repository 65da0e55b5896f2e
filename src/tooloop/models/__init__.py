"""Models: the ``Model`` seam, model strings, and one adapter module per provider API."""

from .base import Model, ModelRequest, ModelSettings, OutputSchema, ToolChoice, ToolDefinition
from .fallback import DEFAULT_FALLBACK_ON, FallbackModel
from .registry import ModelConfig, get_model, model_config, register_model_config, register_provider

__all__ = [
    "DEFAULT_FALLBACK_ON",
    "FallbackModel",
    "Model",
    "ModelConfig",
    "ModelRequest",
    "ModelSettings",
    "OutputSchema",
    "ToolChoice",
    "ToolDefinition",
    "get_model",
    "model_config",
    "register_model_config",
    "register_provider",
]
