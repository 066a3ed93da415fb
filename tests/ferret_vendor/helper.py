"""ferret's model-helper protocol around an attnxai classifier (written for the tests, not
ferret's code): a document is ``[CLS]`` and word ids; ferret's tokenizer adds ``[SEP]`` (its
``remove_first_last`` strips both ends), decodes ids as ``t<id>`` words and its ``[MASK]``, and
the helper's forward pass reads ``[MASK]`` as the model's UNK (attnxai's "replace")."""

from __future__ import annotations

import torch

SEP, MASK = -1, -2


class Tokenizer:
    cls_token, sep_token, mask_token = "[CLS]", "[SEP]", "[MASK]"
    mask_token_id = MASK

    def __init__(self, cls_id: int):
        self.cls_id = cls_id

    def _word(self, i: int) -> str:
        return {self.cls_id: self.cls_token, SEP: self.sep_token, MASK: self.mask_token}.get(
            int(i), f"t{int(i)}")

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return " ".join(self._word(i) for i in list(ids))

    def batch_decode(self, samples, skip_special_tokens: bool = False) -> list[str]:
        return [self.decode(s) for s in samples]


class Helper:
    def __init__(self, model):
        self.model = model
        self.tokenizer = Tokenizer(model.cls_id)

    def _ids(self, text: str) -> list[int]:
        words = [w for w in text.split() if w not in ("[CLS]", "[SEP]")]
        return [self.model.cls_id] + [self.model.unk_id if w == "[MASK]" else int(w[1:])
                                      for w in words]

    def _tokenize(self, text: str) -> dict:
        ids = self._ids(text) + [SEP]
        return {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}

    def _forward(self, text, output_hidden_states: bool = False):
        texts = [text] if isinstance(text, str) else list(text)
        with torch.no_grad():
            logits = self.model(self.model.collate([self._ids(t) for t in texts])).double()
        return None, logits

    def _postprocess_logits(self, logits, target_token_pos_idx=None):
        return logits
