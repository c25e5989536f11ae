"""SPEC D5, issue 38: the EmployeeBenefitsFlow tuning set, each line with the effect it must have.

``benefits_tuning38.txt`` is the set the offline model was tuned against (written by the
demo's author, in his own phrasing, in the held-out set's states and vocabulary): every line
must be understood, and not one may commit (a capture, a selection, a submission, an end) on
what is no choice. The held-out set is test_benefits_heldout38.py's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benefits_corpus import CHOICES, TUNING, BenefitsReplayer, judge
from support.corpus_kit import Case, acted_on_a_guess, report, wants_report


async def test_d5_tuning_set_is_understood_and_never_commits_on_a_guess(
    capsys: pytest.CaptureFixture[str], pytestconfig: pytest.Config
) -> None:
    outcomes = await BenefitsReplayer().replay(TUNING)
    text = report(outcomes)
    if wants_report(pytestconfig):
        with capsys.disabled():
            print("\n" + text)
    guessed = [o.case for o in acted_on_a_guess(outcomes, CHOICES)]
    assert not guessed, f"committed on a guess (issue 35 item 1): {guessed}"
    assert all(o.ok for o in outcomes), text


def test_d5_tuning_set_is_big_varied_and_in_the_held_out_states(tmp_path: Path) -> None:
    cases = BenefitsReplayer().read(TUNING)  # an unknown state fails here, naming the line
    assert len(cases) >= 30
    assert {case.state for case in cases} == {
        "new",
        "household",
        "preferences",
        "plans",
        "account",
        "review",
    }
    assert {"typo", "chatty", "correction", "withdrawn", "guess", "goodbye", "badinput"} <= {
        case.category for case in cases
    }
    assert any(len(case.turns) > 2 for case in cases)


def doc(step: str, status: str = "running", **states: dict) -> dict:
    return {
        "current_step": step,
        "run_status": status,
        "steps": {name: {"state": state} for name, state in states.items()},
    }


def test_d5_the_judge_reads_the_held_out_vocabulary_and_nothing_more() -> None:
    def holds(expected: str, before: dict | None, after: dict, reply: str = "") -> bool:
        return judge(Case("s", "c", "u", expected, 1), before, after, reply).ok

    plan = {"planId": "EPO_VALUE"}
    after = doc(
        "HealthAccountStep",
        MedicalPlanStep={"selectedPlan": plan},
        EligibilityStep={"request": {"planYear": 2027}},
    )
    assert holds("plan EPO_VALUE & at HealthAccountStep", None, after)
    assert holds("field EligibilityStep.request.planYear=2027", None, after)
    assert not holds("field EligibilityStep.request.planYear=2028", None, after)
    assert not holds("plan EPO_VALUE", None, {**after, "run_status": "completed"})
    assert holds("answer Deductible", None, after, "the deductible is $2,500")
    record = {"enrollmentRecord": {"status": "submitted"}}
    done = doc("TerminateSessionStep", "completed", CommitEnrollmentStep=record)
    assert holds("enrolled submitted", None, done) and not holds("end", None, done)
    assert holds("end", None, doc("TerminateSessionStep", "completed"))
    decision = {"decision": {"eligible": False, "reasonCodes": ["OPEN_ENROLLMENT_CLOSED"]}}
    assert holds(
        "ineligible OPEN_ENROLLMENT_CLOSED",
        None,
        doc("IneligibleBenefitsStep", EligibilityStep=decision),
    )
    before = doc("MedicalPlanStep")
    assert holds("none", before, doc("MedicalPlanStep"))
    assert not holds("none", before, doc("MedicalPlanStep", MedicalPlanStep={"selectedPlan": plan}))
    assert holds("none", None, doc("EligibilityStep"))
    with pytest.raises(ValueError, match="Unknown expectation 'booked'"):
        holds("booked EPO_VALUE", None, after)
