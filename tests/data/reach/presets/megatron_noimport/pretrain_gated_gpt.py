"""Pre-train a gated-residual GPT with the mini_core training loop.

python pretrain_gated_gpt.py
"""

from functools import partial

import mini_core.optim as mcore_optimizer
import torch
from mini_core.training import (
    BlendedMegatronDatasetBuilder,
    GPTDataset,
    GPTDatasetConfig,
    GPTModel,
    ModelType,
    core_transformer_config_from_args,
    get_args,
    get_batch_on_this_tp_rank,
    get_blend_from_list,
    get_gpt_layer_with_transformer_engine_spec,
    get_tokenizer,
    parallel_state,
    pretrain,
    print_rank_0,
)
from my_gpt.attention import ProfiledSelfAttention
from my_gpt.layers import GatedResidualLayer
from my_gpt.optimizer import DriftLoggingOptimizer

# The training loop looks the optimizer class up through this module-level name.
mcore_optimizer.DistributedOptimizer = DriftLoggingOptimizer


def model_provider(pre_process: bool = True, post_process: bool = True, vp_stage=None) -> GPTModel:
    args = get_args()
    config = core_transformer_config_from_args(args)
    spec = get_gpt_layer_with_transformer_engine_spec()
    spec.module = GatedResidualLayer
    spec.submodules.self_attention.module = ProfiledSelfAttention
    model = GPTModel(
        config=config,
        transformer_layer_spec=spec,
        vocab_size=args.padded_vocab_size,
        max_sequence_length=args.max_position_embeddings,
        pre_process=pre_process,
        post_process=post_process,
        vp_stage=vp_stage,
    )
    torch.cuda.synchronize()  # ok: capture-explicit-sync
    print_rank_0(f"built GPT with {sum(p.numel() for p in model.parameters())} parameters")
    return model


def loss_func(loss_mask: torch.Tensor, output_tensor: torch.Tensor):
    losses = output_tensor.float()
    loss_mask = loss_mask.view(-1).float()
    loss = torch.sum(losses.view(-1) * loss_mask)
    num_tokens = loss_mask.sum().clone().detach().to(torch.int)
    reporting = torch.cat([loss.clone().detach().view(1), num_tokens.view(1)])
    torch.distributed.all_reduce(reporting, group=parallel_state.get_data_parallel_group())
    return loss, num_tokens, {"lm loss": reporting}


def forward_step(data_iterator, model: GPTModel):
    batch = get_batch_on_this_tp_rank(data_iterator)
    output_tensor = model(
        batch["tokens"], batch["position_ids"], batch["attention_mask"], labels=batch["labels"]
    )
    return output_tensor, partial(loss_func, batch["loss_mask"])


def train_valid_test_datasets_provider(train_val_test_num_samples):
    args = get_args()
    config = GPTDatasetConfig(
        random_seed=args.seed,
        sequence_length=args.seq_length,
        blend=get_blend_from_list(args.data_path),
        split=args.split,
        tokenizer=get_tokenizer(),
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
    )
    builder = BlendedMegatronDatasetBuilder(
        GPTDataset, train_val_test_num_samples, lambda: True, config
    )
    return builder.build()


if __name__ == "__main__":
    train_valid_test_datasets_provider.is_distributed = True
    pretrain(
        train_valid_test_datasets_provider,
        model_provider,
        ModelType.encoder_or_decoder,
        forward_step,
        args_defaults={"tokenizer_type": "GPT2BPETokenizer"},
    )
