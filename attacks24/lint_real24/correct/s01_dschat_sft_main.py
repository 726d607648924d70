# Reduced from microsoft/DeepSpeedExamples applications/DeepSpeed-Chat/training/step1_supervised_finetuning/main.py
# (and dschat/utils/utils.py get_all_reduce_mean, print_rank_0): kept the evaluation() with its all-reduced loss,
# the epoch loop, the rank-0 save_hf_format and the all-rank zero-3 save; model/dataset building dropped.
import argparse
import torch
import deepspeed
from torch.utils.data import DataLoader, DistributedSampler


def print_rank_0(msg, rank=0):
    if rank <= 0:
        print(msg)


def get_all_reduce_mean(tensor):
    torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.SUM)
    tensor = tensor / torch.distributed.get_world_size()
    return tensor


def save_zero_three_model(model_ema, global_rank, save_dir, zero_stage=0):
    zero_stage_3 = zero_stage == 3
    model_to_save = model_ema.module if hasattr(model_ema, "module") else model_ema
    output_state_dict = {}
    for k, v in model_to_save.named_parameters():
        with deepspeed.zero.GatheredParameters([v], enabled=zero_stage_3):
            v_p = v.data.cpu()
        if global_rank == 0:
            output_state_dict[k] = v_p
    if global_rank == 0:
        torch.save(output_state_dict, save_dir + "/pytorch_model.bin")


def save_hf_format(model, tokenizer, args):
    torch.save(model.state_dict(), args.output_dir + "/pytorch_model.bin")


def main(args, model, tokenizer, train_dataset, eval_dataset, optimizer, lr_scheduler):
    deepspeed.init_distributed()
    args.global_rank = torch.distributed.get_rank()
    train_dataloader = DataLoader(train_dataset, sampler=DistributedSampler(train_dataset), batch_size=4)
    eval_dataloader = DataLoader(eval_dataset, sampler=DistributedSampler(eval_dataset), batch_size=4)
    model, optimizer, _, lr_scheduler = deepspeed.initialize(model=model, optimizer=optimizer, lr_scheduler=lr_scheduler)

    def evaluation(model, eval_dataloader):
        model.eval()
        losses = 0
        for step, batch in enumerate(eval_dataloader):
            with torch.no_grad():
                outputs = model(**batch)
            losses += outputs.loss.float()
        losses = losses / (step + 1)
        try:
            losses = get_all_reduce_mean(losses)
        except Exception:
            pass
        perplexity = torch.exp(losses).item()
        return perplexity, losses.item()

    perplexity, eval_loss = evaluation(model, eval_dataloader)
    print_rank_0(f"ppl: {perplexity}, loss: {eval_loss}", args.global_rank)
    for epoch in range(args.num_train_epochs):
        model.train()
        for step, batch in enumerate(train_dataloader):
            outputs = model(**batch, use_cache=False)
            model.backward(outputs.loss)
            model.step()
        perplexity, eval_loss = evaluation(model, eval_dataloader)
        print_rank_0(f"ppl: {perplexity}, loss: {eval_loss}", args.global_rank)
    if args.output_dir is not None:
        if args.global_rank == 0:
            save_hf_format(model, tokenizer, args)
        if args.zero_stage == 3:
            save_zero_three_model(model, args.global_rank, args.output_dir, zero_stage=args.zero_stage)
