//! Element-type variables, their unification, and the inference-time types built on them.
//!
//! Structure (scalar, array of a known rank, tuple, function, shape) is always known when an
//! expression is checked; only element types may be undecided, so only they are variables.
//! A variable is either decided (`Known`) or open with a class: any type, any numeric type,
//! or any float type. Integer literals start as open numeric variables and float literals as
//! open float variables; unification narrows classes, and whatever is still open at the end
//! takes its default (see [`Vars::resolve`]).

use crate::types::{Dim, ElemType, Type};

/// An element-type variable: an index into [`Vars`].
pub(crate) type V = usize;

/// What an open variable may still become. Ordered from least to most specific, so the
/// meet of two classes is their maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// Any element type.
    Any,
    /// `i32`, `i64`, `f32` or `f64`.
    Numeric,
    /// `f32` or `f64`.
    Float,
}

impl Class {
    fn admits(self, t: ElemType) -> bool {
        match self {
            Class::Any => true,
            Class::Numeric => t.is_numeric(),
            Class::Float => t.is_float(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum State {
    Known(ElemType),
    Open { class: Class, int_lit: bool, float_lit: bool },
}

/// Why two variables could not be unified.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clash {
    /// A float literal met an integer type.
    pub float_lit_as_int: bool,
}

/// The union-find store of element-type variables.
#[derive(Debug, Default)]
pub(crate) struct Vars {
    parent: Vec<V>,
    state: Vec<State>,
}

impl Vars {
    fn push(&mut self, s: State) -> V {
        let v = self.parent.len();
        self.parent.push(v);
        self.state.push(s);
        v
    }

    /// A fresh open variable of `class`.
    pub fn open(&mut self, class: Class) -> V {
        self.push(State::Open { class, int_lit: false, float_lit: false })
    }

    /// The variable of an integer literal.
    pub fn int_lit(&mut self) -> V {
        self.push(State::Open { class: Class::Numeric, int_lit: true, float_lit: false })
    }

    /// The variable of a float literal.
    pub fn float_lit(&mut self) -> V {
        self.push(State::Open { class: Class::Float, int_lit: false, float_lit: true })
    }

    /// A variable decided as `t`.
    pub fn known(&mut self, t: ElemType) -> V {
        self.push(State::Known(t))
    }

    fn find(&mut self, v: V) -> V {
        let mut r = v;
        while let Some(&p) = self.parent.get(r) {
            if p == r {
                break;
            }
            r = p;
        }
        let mut c = v;
        while let Some(&p) = self.parent.get(c) {
            if p == r || p == c {
                break;
            }
            self.parent[c] = r;
            c = p;
        }
        r
    }

    fn state(&mut self, v: V) -> (V, State) {
        let r = self.find(v);
        let s = self.state.get(r).copied().unwrap_or(State::Open {
            class: Class::Any,
            int_lit: false,
            float_lit: false,
        });
        (r, s)
    }

    /// Makes `a` and `b` the same type, or says why they cannot be; on failure nothing
    /// changes.
    pub fn unify(&mut self, a: V, b: V) -> Result<(), Clash> {
        let (ra, sa) = self.state(a);
        let (rb, sb) = self.state(b);
        if ra == rb {
            return Ok(());
        }
        let merged = match (sa, sb) {
            (State::Known(x), State::Known(y)) => {
                if x != y {
                    return Err(Clash { float_lit_as_int: false });
                }
                State::Known(x)
            }
            (State::Known(x), State::Open { class, float_lit, .. })
            | (State::Open { class, float_lit, .. }, State::Known(x)) => {
                if !class.admits(x) {
                    return Err(Clash { float_lit_as_int: float_lit && x.is_int() });
                }
                State::Known(x)
            }
            (
                State::Open { class: ca, int_lit: ia, float_lit: fa },
                State::Open { class: cb, int_lit: ib, float_lit: fb },
            ) => State::Open { class: ca.max(cb), int_lit: ia || ib, float_lit: fa || fb },
        };
        if let Some(p) = self.parent.get_mut(rb) {
            *p = ra;
        }
        if let Some(s) = self.state.get_mut(ra) {
            *s = merged;
        }
        Ok(())
    }

    /// Requires `v` to be of `class`.
    pub fn constrain(&mut self, v: V, class: Class) -> Result<(), Clash> {
        let c = self.open(class);
        self.unify(v, c)
    }

    /// `v` in words, for messages: `f32`, `an integer literal`, `a float type`, ...
    pub fn describe(&mut self, v: V) -> String {
        match self.state(v).1 {
            State::Known(t) => t.name().to_string(),
            State::Open { float_lit: true, .. } => "a float literal".into(),
            State::Open { class: Class::Float, .. } => "a float type".into(),
            State::Open { int_lit: true, .. } => "an integer literal".into(),
            State::Open { class: Class::Numeric, .. } => "a numeric type".into(),
            State::Open { class: Class::Any, .. } => "an undetermined type".into(),
        }
    }

    /// `v` as the element type of an array, in short: `f32`, `float`, `num`, `_`.
    fn describe_elem(&mut self, v: V) -> String {
        match self.state(v).1 {
            State::Known(t) => t.name().to_string(),
            State::Open { class: Class::Float, .. } => "float".into(),
            State::Open { class: Class::Numeric, .. } => "num".into(),
            State::Open { class: Class::Any, .. } => "_".into(),
        }
    }

    /// The final type of `v`: its decided type, else the default of its class (float → `f64`,
    /// numeric → `i64`, and an unconstrained variable, such as the parameter of a function
    /// nothing uses, `i64`). The default is recorded, so every use of `v` agrees.
    pub fn resolve(&mut self, v: V) -> ElemType {
        let (r, s) = self.state(v);
        let t = match s {
            State::Known(t) => return t,
            State::Open { class: Class::Float, .. } => ElemType::F64,
            State::Open { .. } => ElemType::I64,
        };
        if let Some(s) = self.state.get_mut(r) {
            *s = State::Known(t);
        }
        t
    }

    /// Resolves an inference type into a final [`Type`].
    pub fn resolve_it(&mut self, it: &IT) -> Type {
        match it {
            IT::Scalar(v) => Type::Scalar(self.resolve(*v)),
            IT::Array { elem, shape } => Type::Array { elem: self.resolve(*elem), shape: shape.clone() },
            IT::Tuple(vs) => Type::Tuple(vs.iter().map(|v| self.resolve(*v)).collect()),
            IT::Func { params, ret } => Type::Func {
                params: params.iter().map(|v| Type::Scalar(self.resolve(*v))).collect(),
                ret: Box::new(self.resolve_it(ret)),
            },
            IT::Shape(r) => Type::ShapeArg(*r),
        }
    }

    /// An inference type in words, for messages.
    pub fn show(&mut self, it: &IT) -> String {
        match it {
            IT::Scalar(v) => self.describe(*v),
            IT::Array { elem, shape } => {
                let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                format!("{}[{}]", self.describe_elem(*elem), dims.join(", "))
            }
            IT::Tuple(vs) => {
                let parts: Vec<String> = vs.iter().map(|v| self.describe_elem(*v)).collect();
                format!("a tuple ({})", parts.join(", "))
            }
            IT::Func { params, ret } => {
                let mut s = String::from("a function ");
                for p in params {
                    s.push_str(&self.describe_elem(*p));
                    s.push_str(" -> ");
                }
                let r = match &**ret {
                    IT::Scalar(v) => self.describe_elem(*v),
                    other => self.show(other),
                };
                s.push_str(&r);
                s
            }
            IT::Shape(r) => format!("a shape of rank {r}"),
        }
    }
}

/// The type of an expression while checking: like [`Type`], with element-type variables.
#[derive(Clone, Debug)]
pub(crate) enum IT {
    /// A scalar.
    Scalar(V),
    /// An array; its rank and dimensions are known.
    Array {
        /// Element type.
        elem: V,
        /// Dimensions, outermost first.
        shape: Vec<Dim>,
    },
    /// A tuple of scalars (an index function's result).
    Tuple(Vec<V>),
    /// A scalar function.
    Func {
        /// Parameter types.
        params: Vec<V>,
        /// Result: `Scalar` or `Tuple`.
        ret: Box<IT>,
    },
    /// A shape argument of this rank.
    Shape(usize),
}
