import abc

import torch


class AbstractRNNTJoint(torch.nn.Module, abc.ABC):
    @abc.abstractmethod
    def joint_after_projection(self, f, g):
        raise NotImplementedError
