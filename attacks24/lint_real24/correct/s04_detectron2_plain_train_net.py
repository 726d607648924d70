# Reduced from facebookresearch/detectron2 tools/plain_train_net.py (do_test, do_train) with
# detectron2/evaluation/evaluator.py's DatasetEvaluator gather and detectron2/utils/comm.py (synchronize, gather,
# is_main_process) inlined. Kept: periodic evaluation on every rank, the gather to rank 0, the main-process-only
# result, the synchronize after testing; dropped: the model/config/checkpointer setup.
import torch.distributed as dist


def get_world_size():
    return dist.get_world_size() if dist.is_initialized() else 1


def get_rank():
    return dist.get_rank() if dist.is_initialized() else 0


def is_main_process():
    return get_rank() == 0


def synchronize():
    if get_world_size() == 1:
        return
    dist.barrier()


def gather(data, dst=0):
    if get_world_size() == 1:
        return [data]
    if get_rank() == dst:
        output = [None for _ in range(get_world_size())]
        dist.gather_object(data, output, dst=dst)
        return output
    dist.gather_object(data, None, dst=dst)
    return []


class COCOEvaluator:
    def __init__(self):
        self._predictions = []

    def process(self, inputs, outputs):
        self._predictions.extend(outputs)

    def evaluate(self):
        synchronize()
        predictions = gather(self._predictions, dst=0)
        if not is_main_process():
            return {}
        return {"bbox": len(predictions)}


def do_test(model, data_loader):
    evaluator = COCOEvaluator()
    for inputs in data_loader:
        evaluator.process(inputs, model(inputs))
    results = evaluator.evaluate()
    if is_main_process():
        print(results)
    return results


def do_train(model, optimizer, data_loader, max_iter, eval_period):
    for iteration, data in zip(range(max_iter), data_loader):
        loss = model(data).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if eval_period > 0 and (iteration + 1) % eval_period == 0 and iteration != max_iter - 1:
            do_test(model, data_loader)
            synchronize()
