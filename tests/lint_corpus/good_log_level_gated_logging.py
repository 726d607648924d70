# The fix of bad_log_level_gated_reduce.py: every rank averages the loss, and only the logging is under the
# logger's level (which differs between ranks: transformers' `log_level_replica`). An `isEnabledFor` test that
# guards only a log call is the logging documentation's own advice for expensive arguments. Written here.
# expect: none
import logging

import torch
import torch.distributed as dist

logger = logging.getLogger(__name__)


def reduce_mean(tensor):
    tensor = tensor.detach().clone()
    dist.all_reduce(tensor)
    return tensor / dist.get_world_size()


def train(model, batches, opt):
    for step, (x, y) in enumerate(batches):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            mean = reduce_mean(loss).item()  # every rank
            if logger.isEnabledFor(logging.INFO):
                logger.info("step %d loss %.4f", step, mean)
        if logger.getEffectiveLevel() <= logging.DEBUG:
            logger.debug("weights %s", [p.norm().item() for p in model.parameters()])
